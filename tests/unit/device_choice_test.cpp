// Host tests of device selection: CTest's resource allocation, the peer of a two-GPU test, clear errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "sc/fixtures/device.hpp"

namespace {

TEST(DeviceChoice, DefaultIsDeviceZero) {
  const sc::device_choice c = sc::choose_device(nullptr, nullptr, nullptr);
  EXPECT_EQ(0, c.index);
  EXPECT_EQ("default", c.source);
}

TEST(DeviceChoice, CTestAllocationIsUsed) {
  const sc::device_choice c = sc::choose_device("1", "gpus", "id:2,slots:1");
  EXPECT_EQ(2, c.index);
  EXPECT_NE(std::string::npos, c.source.find("CTest")) << c.source;
}

TEST(DeviceChoice, ZeroResourceGroupsMeansNoAllocation) {
  // CTest sets CTEST_RESOURCE_GROUP_COUNT=0 for tests that asked for no resources.
  EXPECT_EQ("default", sc::choose_device("0", nullptr, nullptr).source);
}

TEST(DeviceChoice, AllocationWithoutAGpusGroupIsAConfigError) {
  EXPECT_THROW(sc::choose_device("1", "cpus", "id:0,slots:1"), sc::config_error);
  EXPECT_THROW(sc::choose_device("1", "gpus", nullptr), sc::config_error);
}

TEST(ResourceAllocation, ParsesTheFirstEntry) {
  EXPECT_EQ(0, sc::parse_resource_allocation("id:0,slots:1"));
  EXPECT_EQ(12, sc::parse_resource_allocation("id:12,slots:100"));
  EXPECT_EQ(1, sc::parse_resource_allocation("id:1,slots:1;id:2,slots:1"));
}

TEST(ResourceAllocation, MalformedValuesAreConfigErrors) {
  for (const char* bad :
       {"", "0", "id:,slots:1", "id:a,slots:1", "id:0", "id:0,slot:1", "slots:1,id:0", "id:0,slots:x"})
    EXPECT_THROW(sc::parse_resource_allocation(bad), sc::config_error) << '"' << bad << '"';
}

// The second GPU of a two-GPU test (EVT-14).
TEST(PeerDeviceChoice, OneDeviceMeansNoPeerWithAReasonNamingTheVariable) {
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  const sc::peer_choice c = sc::choose_peer_device(0, 1);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(-1, c.index);
  EXPECT_NE(std::string::npos, c.why_not.find("two GPUs")) << c.why_not;
  EXPECT_NE(std::string::npos, c.why_not.find("CUDA_VISIBLE_DEVICES='1'")) << c.why_not;
}

TEST(PeerDeviceChoice, TheLowestOtherIndex) {
  EXPECT_EQ(1, sc::choose_peer_device(0, 4).index);
  EXPECT_EQ(0, sc::choose_peer_device(2, 4).index);
}

}  // namespace
