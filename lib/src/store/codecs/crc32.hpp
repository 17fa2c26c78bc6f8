#pragma once
// CRC-32 (IEEE 802.3, zlib's polynomial), the checksum of sample-log chunks.

#include <cstddef>
#include <cstdint>

namespace sprof::store {

uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace sprof::store
