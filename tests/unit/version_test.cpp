// The run-time version: the header's macros, the library's functions and the
// project's version (CMake's, given as CYCLEGC_PROJECT_VERSION) agree.
#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>

#include <string>

TEST(Version, StringIsTheProjectVersion) {
    EXPECT_STREQ(cgc_version(), CYCLEGC_PROJECT_VERSION);
    EXPECT_STREQ(cgc_version(), CGC_VERSION);
    std::string parts = std::to_string(CGC_VERSION_MAJOR) + "." + std::to_string(CGC_VERSION_MINOR) + "." +
                        std::to_string(CGC_VERSION_PATCH);
    EXPECT_EQ(parts, cgc_version());
}

TEST(Version, NumberOrdersVersions) {
    EXPECT_EQ(cgc_version_number(), CGC_VERSION_NUMBER);
    EXPECT_EQ(cgc_version_number(), CGC_VERSION_MAJOR * 1000000 + CGC_VERSION_MINOR * 1000 + CGC_VERSION_PATCH);
    EXPECT_GT(cgc_version_number(), 0);
}
