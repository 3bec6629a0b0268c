/* The hardware probe: reads /proc and /sys (and a few marker files) under a
 * filesystem root and fills an edge_hw. The root is "/" on a live machine;
 * tests pass a committed snapshot tree (tests/data/hw/<machine>/), which is
 * why nothing here asks the CPU itself (cpuid, hwcap): the x86 flags come
 * from /proc/cpuinfo exactly as on a live machine.
 *
 * Files read (all optional; what is missing takes the defaults):
 *   proc/cpuinfo                  processors, model, flags/Features
 *   proc/meminfo                  MemTotal, MemAvailable
 *   sys/devices/system/cpu/online and cpuN/{topology/physical_package_id,
 *     topology/core_id, cpu_capacity, cpufreq/cpuinfo_max_freq}
 *   sys/devices/system/node/nodeN/cpulist
 *   proc/self/status              Cpus_allowed_list (a container's cpuset)
 *   etc/nv_tegra_release, proc/device-tree/{compatible,model}   Tegra
 *   proc/driver/nvidia/gpus/STAR/information, dev/nvidiaN       NVIDIA driver
 *   dev/fastrpc-cdsp, dev/adsprpc-smd, dev/accel/accelN,
 *     sys/class/accel/accelN/device/vendor                      NPU nodes
 *
 * The NPU: a Snapdragon's Hexagon NPU is reached through FastRPC, whose
 * kernel driver makes dev/fastrpc-cdsp (dev/adsprpc-smd on older Android
 * kernels); upstream NPU drivers (Qualcomm AIC, Intel, AMD) make
 * dev/accel/accelN. A snapshot models such a node as an empty file. ember
 * runs nothing on an NPU: the node only makes an aarch64 host a npu_phone,
 * whose derived settings are a phone's (few big cores, thermal limits). */
#ifndef EMBER_EDGE_PROBE_H
#define EMBER_EDGE_PROBE_H

#include "edge/hw_profile.h"

/* Probes the machine under `root` ("/" for this one; NULL means "/").
 * Fails (EMBER_ERR_IO) only when root is not a readable directory. */
ember_status edge_probe(const char *root, edge_hw *out);

/* The profile ember uses: EMBER_HW_PROFILE's value when `override` is
 * non-NULL and non-empty (a JSON object, or else the path of a JSON file),
 * else the probe of `root`. A bad override is an error naming the variable. */
ember_status edge_hw_detect(const char *root, const char *override, edge_hw *out);

#endif
