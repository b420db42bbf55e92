// Names and unit conversions that the verbs API offers for printing and rate arithmetic.
#include "internal.h"

namespace {

template <size_t N>
const char* pick(const char* const (&names)[N], long index) {
  return index >= 0 && static_cast<size_t>(index) < N && names[index] ? names[index] : "unknown";
}

struct RateRow {
  ibv_rate rate;
  int multiple;  // of 2.5 Gb/s
  int mbps;
};

constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},      {IBV_RATE_5_GBPS, 2, 5000},        {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},      {IBV_RATE_30_GBPS, 12, 30000},     {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},     {IBV_RATE_80_GBPS, 32, 80000},     {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, 5, 14062},      {IBV_RATE_56_GBPS, 22, 56250},     {IBV_RATE_112_GBPS, 45, 112500},
    {IBV_RATE_168_GBPS, 67, 168750},   {IBV_RATE_25_GBPS, 10, 25781},     {IBV_RATE_100_GBPS, 40, 103125},
    {IBV_RATE_200_GBPS, 80, 206250},   {IBV_RATE_300_GBPS, 120, 309375},  {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},     {IBV_RATE_400_GBPS, 160, 425000},  {IBV_RATE_600_GBPS, 240, 637500},
    {IBV_RATE_800_GBPS, 320, 850000},  {IBV_RATE_1200_GBPS, 480, 1275000},
};

}  // namespace

SOFTIB_API const char* ibv_node_type_str(enum ibv_node_type t) {
  static const char* const names[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
                                      "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP", "unspecified"};
  return pick(names, t);
}

SOFTIB_API const char* ibv_port_state_str(enum ibv_port_state s) {
  static const char* const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
                                      "PORT_ACTIVE_DEFER"};
  return pick(names, s);
}

SOFTIB_API const char* ibv_event_type_str(enum ibv_event_type e) {
  static const char* const names[] = {
      "CQ error", "local work queue catastrophic error", "invalid request local work queue error",
      "local access violation work queue error", "communication established", "send queue drained",
      "path migrated", "path migration request error", "local catastrophic error", "port active",
      "port error", "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
      "SRQ limit reached", "last WQE reached", "client reregistration", "GID table change",
      "WQ fatal"};
  return pick(names, e);
}

SOFTIB_API const char* ibv_wc_status_str(enum ibv_wc_status s) {
  static const char* const names[] = {
      "success", "local length error", "local QP operation error", "local EE context operation error",
      "local protection error", "Work Request Flushed Error", "memory management operation error",
      "bad response error", "local access error", "remote invalid request error", "remote access error",
      "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
      "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
      "invalid EE context state", "fatal error", "response timeout error", "general error",
      "TM error", "TM rendezvous not completed"};
  return pick(names, s);
}

SOFTIB_API int ibv_rate_to_mult(enum ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return r.multiple;
  return -1;
}

SOFTIB_API enum ibv_rate mult_to_ibv_rate(int mult) {
  for (const RateRow& r : kRates)
    if (r.multiple == mult) return r.rate;
  return IBV_RATE_MAX;
}

SOFTIB_API int ibv_rate_to_mbps(enum ibv_rate rate) {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return r.mbps;
  return -1;
}

SOFTIB_API enum ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateRow& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}
