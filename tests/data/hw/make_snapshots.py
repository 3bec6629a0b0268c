#!/usr/bin/env python3
"""Writes the /proc and /sys snapshot trees the probe tests read:

  tests/data/hw/x86-server/        2 x Xeon Gold 5415+ (Sapphire Rapids): 2 sockets,
                                   2 NUMA nodes, 8 cores / 16 threads each, AVX-512 + AMX
  tests/data/hw/snapdragon-phone/  Snapdragon 8 Gen 1 (SM8450): 4 x A510 + 3 x A710 + 1 x X2,
                                   cpu_capacity per cluster, FastRPC node of the Hexagon NPU
  tests/data/hw/jetson-orin/       Jetson AGX Orin 64GB: 12 x Cortex-A78AE in 3 clusters,
                                   L4T release file, tegra234 device tree, unified memory
  tests/data/hw/raspberry-pi-5/    Raspberry Pi 5 8GB: 4 x Cortex-A76 (BCM2712)
  tests/data/hw/cuda-desktop/      Ryzen 7 7700X (Zen 4, AVX-512) + an NVIDIA driver's /proc entry

Only the files the probe reads (src/edge/probe.h lists them), with contents
in the kernels' own formats: /proc/cpuinfo as x86 and arm64 kernels print it
(the Features lines are those of the named cores: the A510/A710/X2 have
dotprod, i8mm and bf16 but SVE is disabled on this SoC; the A76 and A78AE have
dotprod and neither i8mm nor bf16), sysfs one value per file, device-tree
strings NUL-terminated, device nodes as empty files. The cpu_capacity values
are the kernel's normalisation (capacity-dmips-mhz x max frequency, the
fastest core = 1024); the phone's are plausible, not copied from a device.

Run from the repository root:  python3 tests/data/hw/make_snapshots.py
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(root, rel, text, binary=False):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text if binary else text.encode())


def cpulist(cpus):
    """[0,1,2,5] -> '0-2,5' (the sysfs form)."""
    out, i = [], 0
    cpus = sorted(cpus)
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def write_cpus(root, cpus):
    """cpus: list of dicts {cpu, package, core, cluster, siblings, max_khz, capacity}."""
    base = "sys/devices/system/cpu"
    write(root, base + "/online", cpulist([c["cpu"] for c in cpus]) + "\n")
    for c in cpus:
        d = "%s/cpu%d" % (base, c["cpu"])
        write(root, d + "/topology/physical_package_id", "%d\n" % c["package"])
        write(root, d + "/topology/core_id", "%d\n" % c["core"])
        write(root, d + "/topology/cluster_id", "%d\n" % c.get("cluster", 0))
        write(root, d + "/topology/thread_siblings_list", cpulist(c["siblings"]) + "\n")
        if c.get("max_khz"):
            write(root, d + "/cpufreq/cpuinfo_max_freq", "%d\n" % c["max_khz"])
        if c.get("capacity"):
            write(root, d + "/cpu_capacity", "%d\n" % c["capacity"])


def write_nodes(root, nodes):
    for i, cpus in enumerate(nodes):
        write(root, "sys/devices/system/node/node%d/cpulist" % i, cpulist(cpus) + "\n")


def meminfo(total_kb, free_kb, avail_kb):
    return ("MemTotal:       %8d kB\nMemFree:        %8d kB\nMemAvailable:   %8d kB\n"
            "Buffers:          215404 kB\nCached:         %8d kB\nSwapCached:            0 kB\n"
            % (total_kb, free_kb, avail_kb, max(0, avail_kb - free_kb)))


# ---- x86 server ----------------------------------------------------------------

SPR_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi "
    "mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon "
    "pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq "
    "dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 "
    "x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch "
    "cpuid_fault epb cat_l3 cat_l2 cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb "
    "stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 "
    "smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt "
    "clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc "
    "cqm_occup_llc cqm_mbm_total cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd "
    "dtherm ida arat pln pts hfi vnmi avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes "
    "vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect "
    "cldemote movdiri movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr ibt "
    "amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities")

ZEN4_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good amd_lbr_v2 "
    "nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 "
    "sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm "
    "extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext "
    "perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba "
    "perfmon_v2 ibrs ibpb stibp ibrs_enhanced vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid "
    "cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total "
    "cqm_mbm_local avx512_bf16 clzero irperf xsaveerptr rdpru wbnoinvd cppc arat npt lbrv "
    "svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold "
    "avic v_vmsave_vmload vgif x2avic v_spec_ctrl vnmi avx512vbmi umip pku ospke avx512_vbmi2 "
    "gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid overflow_recov "
    "succor smca fsrm flush_l1d")


def x86_cpuinfo(entries, vendor, family, model_no, model_name, flags, mhz, cache, cores):
    out = []
    for e in entries:
        out.append(
            "processor\t: %d\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\n"
            "model name\t: %s\nstepping\t: 8\nmicrocode\t: 0x2b000571\ncpu MHz\t\t: %.3f\n"
            "cache size\t: %d KB\nphysical id\t: %d\nsiblings\t: %d\ncore id\t\t: %d\n"
            "cpu cores\t: %d\napicid\t\t: %d\ninitial apicid\t: %d\nfpu\t\t: yes\n"
            "fpu_exception\t: yes\ncpuid level\t: 32\nwp\t\t: yes\nflags\t\t: %s\n"
            "bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb\n"
            "bogomips\t: %.2f\nclflush size\t: 64\ncache_alignment\t: 64\n"
            "address sizes\t: 46 bits physical, 57 bits virtual\npower management:\n\n"
            % (e["cpu"], vendor, family, model_no, model_name, mhz, cache, e["package"],
               2 * cores, e["core"], cores, e["apic"], e["apic"], flags, 2 * mhz))
    return "".join(out)


def x86_server(root):
    # Linux numbers the first thread of every core first (socket 0, then 1),
    # then the second threads: cpu n and n+16 share a core.
    cpus = []
    for cpu in range(32):
        package = (cpu % 16) // 8
        core = cpu % 8
        first = package * 8 + core
        cpus.append(dict(cpu=cpu, package=package, core=core, siblings=[first, first + 16],
                         max_khz=4100000, apic=package * 64 + core * 2 + (cpu >= 16)))
    write(root, "proc/cpuinfo", x86_cpuinfo(cpus, "GenuineIntel", 6, 143,
                                            "Intel(R) Xeon(R) Gold 5415+", SPR_FLAGS, 2900.0,
                                            23040, 8))
    write_cpus(root, cpus)
    write_nodes(root, [list(range(0, 8)) + list(range(16, 24)),
                       list(range(8, 16)) + list(range(24, 32))])
    write(root, "proc/meminfo", meminfo(263597236, 240112344, 251234560))


def cuda_desktop(root):
    cpus = []
    for cpu in range(16):
        core = cpu % 8
        cpus.append(dict(cpu=cpu, package=0, core=core, siblings=[core, core + 8],
                         max_khz=5573000, apic=core * 2 + (cpu >= 8)))
    write(root, "proc/cpuinfo", x86_cpuinfo(cpus, "AuthenticAMD", 25, 97,
                                            "AMD Ryzen 7 7700X 8-Core Processor", ZEN4_FLAGS,
                                            4500.0, 1024, 8))
    write_cpus(root, cpus)
    write_nodes(root, [list(range(16))])
    write(root, "proc/meminfo", meminfo(65005116, 50123456, 58934124))
    write(root, "proc/driver/nvidia/gpus/0000:01:00.0/information",
          "Model: \t\t NVIDIA GeForce RTX 4090\nIRQ:   \t\t 147\n"
          "GPU UUID: \t GPU-5f0c7a62-93a1-4c0e-8b1e-2f3d4c5b6a79\n"
          "Video BIOS: \t 95.02.18.80.87\nBus Type: \t PCIe\nDMA Size: \t 47 bits\n"
          "DMA Mask: \t 0x7fffffffffff\nBus Location: \t 0000:01:00.0\nDevice Minor: \t 0\n"
          "GPU Excluded:\t No\n")
    write(root, "dev/nvidia0", "")
    write(root, "dev/nvidiactl", "")


# ---- arm64 ---------------------------------------------------------------------

def arm_cpuinfo(parts, features, bogomips, tail=""):
    out = []
    for cpu, (variant, part) in enumerate(parts):
        out.append("processor\t: %d\nBogoMIPS\t: %.2f\nFeatures\t: %s\nCPU implementer\t: 0x41\n"
                   "CPU architecture: 8\nCPU variant\t: 0x%x\nCPU part\t: 0x%03x\nCPU revision\t: 0\n\n"
                   % (cpu, bogomips, features, variant, part))
    return "".join(out) + tail


ARMV9_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg "
    "dcpodp flagm2 frint i8mm bf16 bti")
A78AE_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm "
                  "lrcpc dcpop asimddp uscat ilrcpc flagm paca pacg")
A76_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm "
                "lrcpc dcpop asimddp")


def snapdragon_phone(root):
    # cpu0-3 Cortex-A510 1.80 GHz, cpu4-6 Cortex-A710 2.50 GHz, cpu7 Cortex-X2 3.00 GHz
    kinds = [(0x0, 0xd46, 1785600, 389)] * 4 + [(0x2, 0xd47, 2496000, 871)] * 3 + \
            [(0x2, 0xd48, 2995200, 1024)]
    cpus = [dict(cpu=i, package=0, core=i, siblings=[i], max_khz=k[2], capacity=k[3])
            for i, k in enumerate(kinds)]
    write(root, "proc/cpuinfo", arm_cpuinfo([(k[0], k[1]) for k in kinds], ARMV9_FEATURES, 38.40,
                                            "Hardware\t: Qualcomm Technologies, Inc SM8450\n"))
    write_cpus(root, cpus)
    write(root, "proc/meminfo", meminfo(11493376, 612340, 5123456))
    write(root, "dev/fastrpc-cdsp", "")
    write(root, "dev/fastrpc-adsp", "")
    write(root, "proc/device-tree/compatible", b"qcom,taro-mtp\0qcom,taro\0qcom,mtp\0", True)
    write(root, "proc/device-tree/model", b"Qualcomm Technologies, Inc. Taro MTP\0", True)


def jetson_orin(root):
    # Three clusters of four cores; the kernel numbers cores within a cluster,
    # so core_id repeats (0-3) and only cluster_id / thread_siblings_list tell
    # them apart: a (package, core_id) rule would find 4 cores, not 12.
    cpus = [dict(cpu=i, package=0, core=i % 4, cluster=i // 4, siblings=[i], max_khz=2201600,
                 capacity=1024) for i in range(12)]
    write(root, "proc/cpuinfo", arm_cpuinfo([(0x1, 0xd42)] * 12, A78AE_FEATURES, 62.50))
    write_cpus(root, cpus)
    write_nodes(root, [list(range(12))])
    write(root, "proc/meminfo", meminfo(64335824, 55012340, 60123456))
    write(root, "etc/nv_tegra_release",
          "# R36 (release), REVISION: 3.0, GCID: 36923193, BOARD: generic, EABI: aarch64, "
          "DATE: Fri Jul 19 23:24:25 UTC 2024\n# KERNEL_VARIANT: oot\n"
          "TARGET_USERSPACE_LIB_DIR=nvidia\n"
          "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
    write(root, "proc/device-tree/compatible",
          b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0", True)
    write(root, "proc/device-tree/model", b"NVIDIA Jetson AGX Orin Developer Kit\0", True)


def raspberry_pi_5(root):
    cpus = [dict(cpu=i, package=0, core=i, siblings=[i], max_khz=2400000, capacity=1024)
            for i in range(4)]
    write(root, "proc/cpuinfo", arm_cpuinfo([(0x4, 0xd0b)] * 4, A76_FEATURES, 108.00,
                                            "Revision\t: d04170\nSerial\t\t: 2c3b6f1d8e9a0b7c\n"
                                            "Model\t\t: Raspberry Pi 5 Model B Rev 1.0\n"))
    write_cpus(root, cpus)
    write(root, "proc/meminfo", meminfo(8245328, 6801234, 7512345))
    write(root, "proc/device-tree/compatible", b"raspberrypi,5-model-b\0brcm,bcm2712\0", True)
    write(root, "proc/device-tree/model", b"Raspberry Pi 5 Model B Rev 1.0\0", True)


MACHINES = {"x86-server": x86_server, "snapdragon-phone": snapdragon_phone,
            "jetson-orin": jetson_orin, "raspberry-pi-5": raspberry_pi_5,
            "cuda-desktop": cuda_desktop}

if __name__ == "__main__":
    for name, make in MACHINES.items():
        root = os.path.join(HERE, name)
        shutil.rmtree(root, ignore_errors=True)
        make(root)
        print("wrote", root)
