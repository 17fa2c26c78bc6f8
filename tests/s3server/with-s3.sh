#!/bin/bash
# usage: tests/s3server/with-s3.sh COMMAND...
# Runs COMMAND with a fresh local S3 server (@20minutes/s3rver on 127.0.0.1, bucket sprof-test,
# keys S3RVER/S3RVER) and S3_ENDPOINT, S3_BUCKET and the AWS_* variables set; stops the server
# and removes its data afterwards; exits with COMMAND's status.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/node_modules/@20minutes/s3rver" ] || npm ci --prefix "$here" --no-audit --no-fund >/dev/null
work=$(mktemp -d)
: >"$work/log"
node --openssl-legacy-provider "$here/s3-server.js" -d "$work/data" -a 127.0.0.1 -p 0 -s \
  --configure-bucket sprof-test >"$work/log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/^S3rver listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "S3 server did not start" >&2; cat "$work/log" >&2; exit 1; }
export S3_ENDPOINT="http://127.0.0.1:$port" S3_BUCKET=sprof-test S3_SERVER_PID=$pid \
       AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
"$@"
