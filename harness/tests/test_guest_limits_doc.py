"""The README's table of the guest a program meets says what the code does."""

import re

from harness.boot import qemu
from harness.guest import initramfs, protocol
from harness.layout import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
GUEST_SHELL = (REPO_ROOT / "harness" / "guest" / "rootfs" / "inode-duel.sh").read_text()
INIT = (REPO_ROOT / "harness" / "guest" / "rootfs" / "init").read_text()


def table() -> str:
    start = README.index("### The guest a program meets")
    return README[start:README.index("###", start + 4)]


def test_memory_disks_tmpfs_and_path_are_the_codes():
    text = table()
    tmpfs_gb = re.search(r"tmpfs\) mount -t tmpfs -o size=(\d+)g", GUEST_SHELL).group(1)
    harness_mb = re.search(r"size=(\d+)m tmpfs \"\$HARNESS_DIR\"", INIT).group(1)
    inodes = int(initramfs.MKFS["ext4"][initramfs.MKFS["ext4"].index("-N") + 1])
    assert f"tmpfs of at most {tmpfs_gb} GiB" in text
    assert f"ext4 ({inodes:,} inodes) or XFS on a {initramfs.DISK_MB // 1024} GiB virtio disk" \
        in text
    assert (f"{qemu.BASE_MEMORY_MB // 1024} GiB up to 4 vCPUs, plus "
            f"{qemu.MEMORY_PER_EXTRA_VCPU_MB} MiB per vCPU beyond") in text
    assert qemu.memory_for(4) == qemu.BASE_MEMORY_MB
    assert f"`{protocol.GUEST_PATH}`" in text
    assert f"a {harness_mb} MiB tmpfs at `{protocol.HARNESS_DIR}`" in text
