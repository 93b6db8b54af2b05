"""detect-topology on recorded inputs (nvidia-smi CSV, `ip -j addr`, /sys/class/infiniband trees).

The H100 and GH200 inputs are written in the exact formats those tools print (hand-made, named as
such: no such cluster is reachable from here); the H200 input was recorded on the lent GPU machine.
"""
import json
import os
import subprocess
import sys

from conftest import FIXTURES, ROOT

RT = FIXTURES / "runtime"
TOOL = ROOT / "scripts" / "detect-topology"


def detect(*args):
    proc = subprocess.run([str(TOOL), "--json", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_this_machine_without_gpu_or_ib_recommends_ethernet_and_says_what_it_cannot_see():
    code, report = detect()
    advice = report["recommendation"]
    assert advice["preset"] == "ethernet-only"
    assert any("GPUs" in item for item in advice["could_not_see"])


def test_h100_node_with_8_ib_ports_but_one_down():
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h100x8.csv"),
                          "--sys-root", str(RT / "sys-h100-8port"), "--ip-output", str(RT / "ip-h100.json"),
                          "--preset", str(ROOT / "presets" / "h100-ib-8port"))
    assert len(report["node"]["gpus"]) == 8
    assert report["recommendation"]["preset"] == "ethernet-only"  # 7 active ports: no 8-port preset
    assert code == 1 and report["mismatches"] == ["InfiniBand: 7 active port(s), preset assumes 8"]


def test_gh200_node_avoids_link_local_interface():
    code, report = detect("--arch", "aarch64", "--nvidia-smi-output", str(RT / "nvidia-smi-gh200.csv"),
                          "--sys-root", str(RT / "sys-h100-8port"), "--ip-output", str(RT / "ip-gh200.json"),
                          "--preset", str(ROOT / "presets" / "gh200"))
    advice = report["recommendation"]
    assert advice["preset"] == "gh200"
    assert advice["settings"]["NCCL_SOCKET_IFNAME"] == "eth0"
    assert any("enP5p9s0" in note for note in advice["why"])
    assert report["mismatches"] == []


def test_gh200_preset_on_an_x86_node_reports_the_arch():
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h100x8.csv"),
                          "--ip-output", str(RT / "ip-h100.json"), "--preset", str(ROOT / "presets" / "gh200"))
    assert code == 1 and "arch: node is x86_64, preset assumes aarch64" in report["mismatches"]


def test_recorded_h200_output_is_recognised():
    """nvidia-smi as recorded on the lent H200 (2026-12-02): one GPU, no InfiniBand, no iproute2."""
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h200-recorded.csv"),
                          "--sys-root", str(RT / "sys-none"))
    assert report["node"]["gpus"] == [{"name": "NVIDIA H200", "memory_gib": 140.4}]
    recorded = json.loads((RT / "detect-topology-h200-recorded.json").read_text())
    assert recorded["node"]["gpus"] == report["node"]["gpus"] and recorded["node"]["nccl"] == "2.28.3"
    assert report["recommendation"]["preset"] == "ethernet-only"


def test_virtual_interfaces_are_not_recommended_for_nccl(tmp_path):
    ip = tmp_path / "ip.json"
    ip.write_text(json.dumps([
        {"ifname": "lo", "flags": ["LOOPBACK"], "operstate": "UNKNOWN", "addr_info": []},
        {"ifname": "ifb0", "flags": [], "operstate": "UNKNOWN", "addr_info": []},
        {"ifname": "eth0", "flags": [], "operstate": "UP", "addr_info": [{"local": "10.0.0.2"}]}]))
    code, report = detect("--ip-output", str(ip))
    assert report["recommendation"]["settings"]["NCCL_SOCKET_IFNAME"] == "eth0"


def rdma_tree(tmp_path, link_layer, active=8, device="mlx5_{}"):
    """A /sys/class/infiniband tree in the kernel's format (hand-made, no such node is reachable)."""
    for i in range(8):
        port = tmp_path / "class" / "infiniband" / device.format(i) / "ports" / "1"
        port.mkdir(parents=True)
        (port / "state").write_text("4: ACTIVE\n" if i < active else "1: DOWN\n")
        (port / "rate").write_text("400 Gb/sec (4X NDR)\n" if link_layer == "InfiniBand" else "400 Gb/sec (4X)\n")
        (port / "link_layer").write_text(link_layer + "\n")
    return tmp_path


def test_roce_node_recommends_the_roce_preset(tmp_path):
    sys_root = rdma_tree(tmp_path, "Ethernet")
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h100x8.csv"),
                          "--sys-root", str(sys_root), "--ip-output", str(RT / "ip-h100.json"),
                          "--preset", str(ROOT / "presets" / "roce"))
    advice = report["recommendation"]
    assert advice["preset"] == "roce", advice
    assert advice["settings"]["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{i}" for i in range(8))
    assert {p["link_layer"] for p in report["node"]["ib_ports"]} == {"Ethernet"}
    assert (code, report["mismatches"]) == (0, [])


def test_roce_ports_do_not_make_an_infiniband_node(tmp_path):
    """8 active RoCE ports are not InfiniBand ports: the IB preset lists the mismatch."""
    sys_root = rdma_tree(tmp_path, "Ethernet")
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h100x8.csv"),
                          "--sys-root", str(sys_root), "--ip-output", str(RT / "ip-h100.json"),
                          "--preset", str(ROOT / "presets" / "h100-ib-8port"))
    assert code == 1 and report["mismatches"] == ["InfiniBand: 0 active port(s), preset assumes 8"]


def test_infiniband_node_with_all_ports_up_recommends_the_ib_preset(tmp_path):
    sys_root = rdma_tree(tmp_path, "InfiniBand", device="ibp{}")
    code, report = detect("--arch", "x86_64", "--nvidia-smi-output", str(RT / "nvidia-smi-h100x8.csv"),
                          "--sys-root", str(sys_root), "--ip-output", str(RT / "ip-h100.json"))
    assert report["recommendation"]["preset"] == "h100-ib-8port"
    assert report["recommendation"]["settings"]["NCCL_IB_HCA"] == "ibp"
