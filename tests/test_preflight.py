"""smoke.preflight's InfiniBand checks on sysfs trees: an 8-port HGX node with ibp7 down
(tests/fixtures/runtime/sys-h100-8port, hand-written in sysfs's format) and variants of it."""
import shutil

import pytest

from conftest import FIXTURES

from smoke import preflight

SYS = FIXTURES / "runtime" / "sys-h100-8port" / "class" / "infiniband"


def with_front_end(tmp_path, link_layer="Ethernet"):
    """All 8 compute ports up, plus an active front-end port (mlx5_0), as on a node with a RoCE NIC."""
    root = tmp_path / "infiniband"
    shutil.copytree(SYS, root)
    (root / "ibp7" / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    port = root / "mlx5_0" / "ports" / "1"
    port.mkdir(parents=True)
    (port / "state").write_text("4: ACTIVE\n")
    (port / "link_layer").write_text(f"{link_layer}\n")
    (port / "rate").write_text("100 Gb/sec (4X EDR)\n")
    return str(root)


def test_eight_compute_ports_at_400_pass_and_seven_fail(tmp_path):
    ok, detail = preflight.check_ib(8, False, "ibp", 400, root=with_front_end(tmp_path))
    assert ok is True and detail.startswith("8 active InfiniBand port(s) at >= 400 Gb/s match NCCL_IB_HCA=ibp")
    assert preflight.check_ib(8, False, "ibp", 400, root=str(SYS))[0] is False  # ibp7 down


def test_a_roce_front_end_is_not_counted_and_fails_when_selected(tmp_path):
    root = with_front_end(tmp_path)
    assert preflight.check_ib(8, False, "ibp", 400, root=root)[0] is True
    ok, detail = preflight.check_ib(8, False, "", 400, root=root)  # NCCL_IB_HCA unset: NCCL takes every port
    assert ok is False and "another link layer NCCL's IB transport would also use: mlx5_0:1 (Ethernet)" in detail


def test_roce_preset_counts_ethernet_link_layer_ports(tmp_path):
    root = tmp_path / "infiniband"
    for i in range(8):
        port = root / f"mlx5_{i}" / "ports" / "1"
        port.mkdir(parents=True)
        (port / "state").write_text("4: ACTIVE\n"), (port / "link_layer").write_text("Ethernet\n")
        (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    ok, detail = preflight.check_ib(8, False, "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7", 400,
                                    "Ethernet", root=str(root))
    assert ok is True and detail.startswith("8 active RoCE port(s)")
    assert preflight.check_ib(8, False, "mlx5", 400, root=str(root))[0] is False  # an IB preset on this node


def test_seven_rails_plus_an_ib_front_end_is_not_eight_at_400(tmp_path):
    root = with_front_end(tmp_path, link_layer="InfiniBand")
    (tmp_path / "infiniband" / "ibp7" / "ports" / "1" / "state").write_text("1: DOWN\n")
    ok, detail = preflight.check_ib(8, False, "", 400, root=root)
    assert ok is False and detail.startswith("7 active") and "slower: mlx5_0:1 100 Gb/s" in detail


@pytest.mark.parametrize("spec, dev, port, want", [
    ("ibp", "ibp3", "1", True), ("ibp", "mlx5_0", "1", False), ("=ibp3", "ibp31", "1", False),
    ("^mlx5_0", "mlx5_0", "1", False), ("^mlx5_0", "ibp0", "1", True), ("ibp0:2", "ibp0", "1", False),
    ("", "anything", "1", True)])
def test_hca_filter_reads_nccl_ib_hca_as_nccl_does(spec, dev, port, want):
    assert preflight.hca_filter(spec)(dev, port) is want


def test_memlock_is_judged_only_with_rdma():
    assert preflight.check_memlock(False, False)[0] is None
    ok, detail = preflight.check_memlock(True, False)
    assert ok is (detail == "locked memory unlimited")


def roce_port(root, dev="mlx5_0", gids=(), state="4: ACTIVE"):
    """A RoCE port in sysfs's format (hand-written after /sys/class/infiniband/*/ports/1/): gids/<i>
    and gid_attrs/types/<i> per (index, address, type)."""
    port = root / dev / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "state").write_text(f"{state}\n")
    (port / "link_layer").write_text("Ethernet\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    for index, gid, kind in gids:
        (port / "gids" / str(index)).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
    return root


LINK_LOCAL = "fe80:0000:0000:0000:0a0c:bbff:fe11:2233"
V4 = "0000:0000:0000:0000:0000:ffff:0a00:0105"  # ::ffff:10.0.1.5
V6 = "fd02:0000:0000:0000:0000:0000:0000:0105"


@pytest.mark.parametrize("gids, family, addr_range, gid_index, ok, words", [
    ([(0, LINK_LOCAL, "IB/RoCE v1"), (1, LINK_LOCAL, "RoCE v2"), (2, V4, "IB/RoCE v1"), (3, V4, "RoCE v2")],
     "", "", "", True, "AF_INET: mlx5_0:1 index 3"),
    ([(0, LINK_LOCAL, "IB/RoCE v1"), (1, LINK_LOCAL, "RoCE v2"), (2, V4, "IB/RoCE v1")], "", "", "", False,
     "no RoCE v2 GID of AF_INET on mlx5_0:1"),
    ([(0, LINK_LOCAL, "RoCE v2"), (3, V4, "RoCE v2")], "AF_INET6", "", "", False, "AF_INET6"),  # an IPv6-only fabric
    ([(0, LINK_LOCAL, "RoCE v2"), (5, V6, "RoCE v2")], "AF_INET6", "fd02::/16", "", True, "index 5"),
    ([(0, LINK_LOCAL, "RoCE v2"), (5, V6, "RoCE v2")], "AF_INET6", "fd03::/16", "", False, "in fd03::/16"),
    ([(3, V4, "RoCE v2")], "AF_INET", "10.0.0.0/8", "", True, "index 3"),
    ([(0, LINK_LOCAL, "IB/RoCE v1"), (3, V4, "RoCE v2")], "", "", "0", False, "GID index 0 of type RoCE v2"),
    ([(0, LINK_LOCAL, "IB/RoCE v1"), (3, V4, "RoCE v2")], "", "", "3", True, "index 3"),
])
def test_roce_ports_need_a_roce_v2_gid_of_nccls_address_family(tmp_path, gids, family, addr_range, gid_index, ok,
                                                                words):
    """Finding 8: NCCL 2.25.1 (net_ib.cc, ncclIbGetGidIndex) moves off GID index 0 only to a GID of
    NCCL_IB_ADDR_FAMILY; without a RoCE v2 one its connections fail or hang."""
    root = roce_port(tmp_path, gids=gids)
    result, detail = preflight.check_roce_gid("Ethernet", False, "mlx5", family, addr_range, gid_index, root=str(root))
    assert result is ok and words in detail, detail


def test_the_roce_check_stays_out_of_infiniband_and_functional_runs(tmp_path):
    assert preflight.check_roce_gid("InfiniBand", False, root=str(tmp_path))[0] is None
    assert preflight.check_roce_gid("Ethernet", True, root=str(tmp_path))[0] is None
    assert preflight.check_roce_gid("Ethernet", False, family="AF_UNIX", root=str(tmp_path))[0] is False
