#!/usr/bin/env python3
"""Writes a realistic kernel/syslog file for end-to-end `faultline diagnose` timing.

Mostly benign lines (systemd, sshd, cron, kernel networking/storage chatter) in the
rsyslog `kern.log`/`syslog` form, with about 1% GPU/PCIe lines (XID 13/31/94/79 with
varying pids, corrected AER bursts with their detail lines, MCE/EDAC, mlx5). All
content is made up; the output is deterministic for a given --seed.

  bench/gen_kernel_log.py --mb 300 > /tmp/big.log
  /usr/bin/time -v build/faultline diagnose /tmp/big.log
  /usr/bin/time -v grep -cE 'NVRM|Xid|SXid|AER|fallen off|mce' /tmp/big.log

--distinct-xids N writes N distinct XID lines (one pid each) and nothing else: the
memory worst case (every line its own observation).
"""
import argparse
import random
import sys

HOST = "gpu-node-07"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

BENIGN_KERNEL = [
    "IPv6: ADDRCONF(NETDEV_CHANGE): veth{h}: link becomes ready",
    "cni0: port {n}(veth{h}) entered forwarding state",
    "device veth{h} entered promiscuous mode",
    "audit: type=1400 audit({t}:{n}): apparmor=\"ALLOWED\" operation=\"open\" profile=\"snap.lxd\" pid={p}",
    "EXT4-fs (nvme0n1p{d}): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
    "nvme nvme{d}: 64/0/0 default/read/poll queues",
    "perf: interrupt took too long ({n} > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    "TCP: request_sock_TCP: Possible SYN flooding on port {n}. Sending cookies.",
    "usb 1-{d}: new high-speed USB device number {n} using xhci_hcd",
    "br-{h}: port 1(veth{h}) entered blocking state",
    "xfs filesystem being remounted at /var/lib/kubelet/pods/{h}/volumes supports timestamps until 2038",
    "nfs: server 10.0.{d}.{n} OK",
]
BENIGN_OTHER = [
    "systemd[1]: Started Session {n} of User slurm.",
    "systemd[1]: session-{n}.scope: Deactivated successfully.",
    "sshd[{p}]: Accepted publickey for ops from 10.1.{d}.{n} port {p} ssh2: ED25519 SHA256:{h}",
    "sshd[{p}]: pam_unix(sshd:session): session closed for user ops",
    "CRON[{p}]: (root) CMD (/usr/lib/sa/sa1 1 1)",
    "kubelet[{p}]: I1201 10:00:00.{n} {p} reconciler.go:357] \"operationExecutor.VerifyControllerAttachedVolume\"",
    "containerd[{p}]: time=\"2026-12-01T10:00:00.{n}Z\" level=info msg=\"shim disconnected\" id={h}",
    "slurmd[{p}]: launch task StepId={n}.0 request from UID:{p} GID:{p}",
    "nvidia-persistenced[{p}]: device 0000:{b}:00.0 - persistence mode enabled.",
    "dbus-daemon[{p}]: [system] Successfully activated service 'org.freedesktop.hostname1'",
]
GPU_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]


def stamp(t):
    # rsyslog traditional form: "Dec  1 10:00:00"
    day = 1 + int(t // 86400) % 28
    s = int(t % 86400)
    return "%s %2d %02d:%02d:%02d" % (MONTHS[11], day, s // 3600, s // 60 % 60, s % 60)


def gpu_event(rng, t, up):
    """One GPU/PCIe event: a list of kernel messages (a header and its detail lines)."""
    bus = rng.choice(GPU_BUSES)
    pid = rng.randrange(1000, 4000000)
    r = rng.random()
    if r < 0.35:
        return ["NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=python3, Graphics SM Warp Exception on "
                "(GPC %d, TPC %d, SM 0): Out Of Range Address" % (bus, pid, rng.randrange(8), rng.randrange(9))]
    if r < 0.55:
        return ["NVRM: Xid (PCI:0000:%s:00): 31, pid=%d, name=pt_main_thread, Ch 00000008, intr 00000000. "
                "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_a%07x. Fault is of type FAULT_PDE "
                "ACCESS_TYPE_VIRT_READ" % (bus, pid, rng.randrange(1 << 24))]
    if r < 0.65:
        return ["NVRM: Xid (PCI:0000:%s:00): 94, pid=%d, name=train, Contained: SM (0x1). RST: No, D-RST: No"
                % (bus, pid)]
    if r < 0.85:
        port = "0000:%02x:01.0" % (int(bus, 16) - 1)
        dev = "0000:%s:00.0" % bus
        return ["pcieport %s: AER: Corrected error received: %s" % (port, dev),
                "nvidia %s: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)" % dev,
                "nvidia %s:   device [10de:2330] error status/mask=00000001/0000e000" % dev,
                "nvidia %s:    [ 0] RxErr                  (First)" % dev]
    if r < 0.92:
        return ["mce: [Hardware Error]: Machine check events logged",
                "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#%d_DIMM#0 (channel:%d slot:0 page:0x%x "
                "offset:0x0 grain:32 syndrome:0x0)" % (rng.randrange(8), rng.randrange(8), rng.randrange(1 << 20))]
    return ["mlx5_core 0000:%s:00.0: mlx5_port_module_event:1192:(pid 0): Port module event: module 0, "
            "Cable plugged" % bus]


def fill(template, rng, t, up):
    return template.format(n=rng.randrange(100000), p=rng.randrange(1000, 4000000), d=rng.randrange(8),
                           h="%08x" % rng.randrange(1 << 32), t="%.3f" % (1764583200 + up), b=rng.choice(GPU_BUSES))


def write_log(out, mb, seed, gpu_fraction):
    rng = random.Random(seed)
    t = 1764583200.0 % 86400  # wall clock seconds, only the time of day matters for the stamp
    up = 1234.5
    written = 0
    limit = mb * 1000 * 1000
    buf = []
    while written < limit:
        t += rng.random() * 0.01
        up += rng.random() * 0.01
        if rng.random() < gpu_fraction:
            lines = ["%s %s kernel: [%12.6f] %s" % (stamp(t), HOST, up, m) for m in gpu_event(rng, t, up)]
        elif rng.random() < 0.5:
            lines = ["%s %s kernel: [%12.6f] %s" % (stamp(t), HOST, up, fill(rng.choice(BENIGN_KERNEL), rng, t, up))]
        else:
            lines = ["%s %s %s" % (stamp(t), HOST, fill(rng.choice(BENIGN_OTHER), rng, t, up))]
        for line in lines:
            buf.append(line)
            written += len(line) + 1
        if len(buf) >= 10000:
            out.write("\n".join(buf) + "\n")
            buf = []
    if buf:
        out.write("\n".join(buf) + "\n")


def write_distinct_xids(out, count):
    for i in range(count):
        sec = 1000 + i // 1000
        out.write("[%6d.%06d] NVRM: Xid (PCI:0000:%s:00): 13, pid=%d, name=job%d, Graphics SM Warp Exception on "
                  "(GPC 1, TPC 2, SM 0): Out Of Range Address\n"
                  % (sec, (i % 1000) * 1000, GPU_BUSES[i % 8], 100000 + i, i))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=300, help="approximate size in MB (10^6 bytes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpu-fraction", type=float, default=0.01, help="share of events that are GPU/PCIe")
    ap.add_argument("--distinct-xids", type=int, default=0, help="write only this many distinct XID lines")
    args = ap.parse_args()
    if args.distinct_xids:
        write_distinct_xids(sys.stdout, args.distinct_xids)
    else:
        write_log(sys.stdout, args.mb, args.seed, args.gpu_fraction)


if __name__ == "__main__":
    main()
