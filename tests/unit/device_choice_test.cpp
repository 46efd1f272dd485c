// Host tests of device selection: CTest's resource allocation, STREAMCHECK_DEVICE, and clear errors.
#include <gtest/gtest.h>

#include "sc/fixtures/device.hpp"

namespace {

TEST(DeviceChoice, DefaultIsDeviceZero) {
  const sc::device_choice c = sc::choose_device(nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(0, c.index);
  EXPECT_EQ("default", c.source);
}

TEST(DeviceChoice, EnvironmentIndexIsUsed) {
  EXPECT_EQ(3, sc::choose_device(nullptr, nullptr, nullptr, "3").index);
  EXPECT_EQ(0, sc::choose_device(nullptr, nullptr, nullptr, "").index);  // empty = unset
}

TEST(DeviceChoice, MalformedEnvironmentIndexIsAConfigError) {
  for (const char* bad : {"-1", "gpu0", "1.5", " 1", "9999999"})
    EXPECT_THROW(sc::choose_device(nullptr, nullptr, nullptr, bad), sc::config_error) << bad;
}

TEST(DeviceChoice, CTestAllocationTakesPrecedence) {
  const sc::device_choice c = sc::choose_device("1", "gpus", "id:2,slots:1", "5");
  EXPECT_EQ(2, c.index);
  EXPECT_NE(std::string::npos, c.source.find("CTest")) << c.source;
}

TEST(DeviceChoice, ZeroResourceGroupsMeansNoAllocation) {
  // CTest sets CTEST_RESOURCE_GROUP_COUNT=0 for tests that asked for no resources.
  EXPECT_EQ("STREAMCHECK_DEVICE", sc::choose_device("0", nullptr, nullptr, "1").source);
  EXPECT_EQ(0, sc::choose_device("0", nullptr, nullptr, nullptr).index);
}

TEST(DeviceChoice, AllocationWithoutAGpusGroupIsAConfigError) {
  EXPECT_THROW(sc::choose_device("1", "cpus", "id:0,slots:1", nullptr), sc::config_error);
  EXPECT_THROW(sc::choose_device("1", "gpus", nullptr, nullptr), sc::config_error);
}

TEST(ResourceAllocation, ParsesTheFirstEntry) {
  EXPECT_EQ(0, sc::parse_resource_allocation("id:0,slots:1"));
  EXPECT_EQ(12, sc::parse_resource_allocation("id:12,slots:100"));
  EXPECT_EQ(1, sc::parse_resource_allocation("id:1,slots:1;id:2,slots:1"));
}

TEST(ResourceAllocation, MalformedValuesAreConfigErrors) {
  for (const char* bad : {"", "0", "id:,slots:1", "id:a,slots:1", "id:0", "id:0,slot:1", "slots:1,id:0",
                          "id:0,slots:x"})
    EXPECT_THROW(sc::parse_resource_allocation(bad), sc::config_error) << '"' << bad << '"';
}

// The second GPU of a two-GPU test (EVT-14).
TEST(PeerDeviceChoice, OneDeviceMeansNoPeerWithAReason) {
  const sc::peer_choice c = sc::choose_peer_device(0, 1, nullptr);
  EXPECT_EQ(-1, c.index);
  EXPECT_NE(std::string::npos, c.why_not.find("two GPUs")) << c.why_not;
}

TEST(PeerDeviceChoice, DefaultIsTheLowestOtherIndex) {
  EXPECT_EQ(1, sc::choose_peer_device(0, 4, nullptr).index);
  EXPECT_EQ(0, sc::choose_peer_device(2, 4, nullptr).index);
  EXPECT_EQ(1, sc::choose_peer_device(0, 2, "").index);  // empty = unset
}

TEST(PeerDeviceChoice, EnvironmentPeerThatIsTheOwnDeviceFallsBackToAnother) {
  // CTest may allocate the test the GPU the variable names.
  const sc::peer_choice c = sc::choose_peer_device(1, 3, "1");
  EXPECT_EQ(0, c.index);
  EXPECT_NE(std::string::npos, c.source.find("own device")) << c.source;
}

TEST(PeerDeviceChoice, EnvironmentPeerWithOneGpuStillSkips) {
  EXPECT_EQ(-1, sc::choose_peer_device(0, 1, "1").index);
}

TEST(PeerDeviceChoice, EnvironmentPeerIsUsedAndChecked) {
  const sc::peer_choice c = sc::choose_peer_device(0, 3, "2");
  EXPECT_EQ(2, c.index);
  EXPECT_EQ("STREAMCHECK_PEER_DEVICE", c.source);
  EXPECT_THROW(sc::choose_peer_device(0, 3, "3"), sc::config_error);  // not visible
  EXPECT_THROW(sc::choose_peer_device(0, 3, "x"), sc::config_error);
}

}  // namespace
