#include "common/hmac.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

std::string hex(const uint8_t* data, size_t len) {
  std::string out(2 * len + 1, '\0');
  stasis_hex_encode(data, len, out.data());
  out.resize(2 * len);
  return out;
}

std::string sha256_hex(const std::string& message) {
  uint8_t digest[32];
  stasis_sha256(reinterpret_cast<const uint8_t*>(message.data()), message.size(), digest);
  return hex(digest, sizeof digest);
}

std::vector<uint8_t> bytes(const std::string& hex_text) {
  std::vector<uint8_t> out(hex_text.size() / 2);
  EXPECT_EQ(stasis_hex_decode(hex_text.c_str(), out.data(), out.size()), 0) << hex_text;
  return out;
}

std::string hmac_hex(const std::vector<uint8_t>& key, const std::vector<uint8_t>& message) {
  uint8_t mac[32];
  stasis_hmac_sha256(key.data(), key.size(), message.data(), message.size(), mac);
  return hex(mac, sizeof mac);
}

std::vector<uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

// FIPS 180-4 examples (and the NIST one-million-'a' vector).
TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Padding edge cases: 55, 56 and 64 bytes straddle the length field's block boundary.
TEST(Sha256, BlockBoundaries) {
  EXPECT_EQ(sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

// RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (case 5 checks truncated output, which we never use).
TEST(HmacSha256, Rfc4231) {
  EXPECT_EQ(hmac_hex(std::vector<uint8_t>(20, 0x0b), text("Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_hex(text("Jefe"), text("what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hmac_hex(std::vector<uint8_t>(20, 0xaa), std::vector<uint8_t>(50, 0xdd)),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(hmac_hex(bytes("0102030405060708090a0b0c0d0e0f10111213141516171819"),
                     std::vector<uint8_t>(50, 0xcd)),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(hmac_hex(std::vector<uint8_t>(131, 0xaa),
                     text("Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(hmac_hex(std::vector<uint8_t>(131, 0xaa),
                     text("This is a test using a larger than block-size key and a larger than "
                          "block-size data. The key needs to be hashed before being used by the "
                          "HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(Hex, RoundTripAndRejects) {
  const uint8_t data[] = {0x00, 0x01, 0xab, 0xff, 0x7f};
  char encoded[2 * sizeof data + 1];
  stasis_hex_encode(data, sizeof data, encoded);
  EXPECT_STREQ(encoded, "0001abff7f");

  uint8_t decoded[sizeof data];
  ASSERT_EQ(stasis_hex_decode("0001ABff7f", decoded, sizeof decoded), 0);
  EXPECT_EQ(0, memcmp(decoded, data, sizeof data));

  EXPECT_EQ(stasis_hex_decode("0001abff7", decoded, sizeof decoded), -1) << "too short";
  EXPECT_EQ(stasis_hex_decode("0001abfg7f", decoded, sizeof decoded), -1) << "not hex";
  EXPECT_EQ(stasis_hex_decode(nullptr, decoded, sizeof decoded), -1);
}

TEST(MacEqual, ComparesEveryByte) {
  uint8_t a[32] = {}, b[32] = {};
  EXPECT_EQ(stasis_mac_equal(a, b, sizeof a), 1);
  b[31] = 1;
  EXPECT_EQ(stasis_mac_equal(a, b, sizeof a), 0);
  b[31] = 0;
  b[0] = 0x80;
  EXPECT_EQ(stasis_mac_equal(a, b, sizeof a), 0);
}

}  // namespace
