#pragma once
// Temporary credentials of a role, as the AWS CLI finds them when neither the environment nor the
// AWS files hold keys: a container's (ECS, SageMaker: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or
// _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]), else the EC2 instance's through
// IMDSv2 (a session token, then iam/security-credentials/<role>; AWS_EC2_METADATA_SERVICE_ENDPOINT,
// AWS_EC2_METADATA_DISABLED). They expire: fetched again five minutes before they do, so a
// recording that uploads for hours keeps signing.

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "sprof/result.hpp"
#include "sprof/s3.hpp"

namespace sprof::remote {

struct ExpiringCredentials {
  Credentials credentials;
  int64_t expires_epoch_s = 0;  // 0: never
};

class RoleCredentials {
 public:
  using Fetch = std::function<Result<ExpiringCredentials>()>;
  RoleCredentials(Fetch fetch, ExpiringCredentials first);
  // The credentials to sign with now, fetched again when they are about to expire (a failed
  // fetch keeps the old ones until they have expired, and says so once).
  Credentials current();

 private:
  Fetch fetch_;
  std::mutex mutex_;
  ExpiringCredentials now_;
  bool warned_ = false;
};

// The container's credentials fetcher when the environment names its endpoint, else nothing.
std::optional<RoleCredentials::Fetch> container_credentials();
// The instance role's fetcher (IMDSv2), unless AWS_EC2_METADATA_DISABLED is true.
std::optional<RoleCredentials::Fetch> instance_credentials();
// "2026-11-25T23:00:00Z" -> epoch seconds.
std::optional<int64_t> parse_expiration(std::string_view text);

}  // namespace sprof::remote
