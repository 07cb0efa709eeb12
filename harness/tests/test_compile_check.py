"""Which files compile-check compiles: touched, matching, and includers of private headers."""

from harness.kernels import compile_check, source


def commit_all(layout, message):
    source.git(layout.src, "add", "-A")
    source.git(layout.src, "commit", "-qm", message)
    return source.git(layout.src, "rev-parse", "HEAD").stdout.strip()


def write(layout, path, text):
    target = layout.src / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_files_to_compile(layout):
    write(layout, "fs/xfs/xfs_trace.h", "old\n")
    write(layout, "fs/xfs/xfs_trace.c", '#include "xfs_trace.h"\n')
    write(layout, "fs/xfs/xfs_super.c", "#include <linux/fs.h>\n")
    write(layout, "include/linux/fs.h", "unsigned int i_refs;\n")
    write(layout, "fs/btrfs/inode.c", "x = inode->i_count;\n")
    write(layout, "arch/arm/kernel/foo.c", "x = inode->i_count;\n")
    write(layout, "fs/squashfs/inode.c", "unrelated\n")
    base = commit_all(layout, "base")
    write(layout, "fs/xfs/xfs_trace.h", "new\n")
    write(layout, "fs/squashfs/inode.c", "touched\n")
    write(layout, "include/linux/fs.h", "unsigned int i_refs; /* changed */\n")
    head = commit_all(layout, "series")

    assert compile_check.files_to_compile(layout, base, head, None) == [
        "fs/squashfs/inode.c", "fs/xfs/xfs_trace.c"]
    # A pattern adds the users the patches did not touch, except other arches'.
    assert compile_check.files_to_compile(layout, base, head, r"\bi_(count|refs)\b") == [
        "fs/btrfs/inode.c", "fs/squashfs/inode.c", "fs/xfs/xfs_trace.c"]


def test_other_architectures_are_listed_not_dropped(layout, monkeypatch):
    write(layout, "arch/powerpc/platforms/cell/spufs/file.c", "x = inode->i_count;\n")
    write(layout, "arch/arm/kernel/foo.c", "x = inode->i_count;\n")
    write(layout, "fs/btrfs/inode.c", "x = inode->i_count;\n")
    base = commit_all(layout, "base")
    write(layout, "arch/powerpc/platforms/cell/spufs/file.c", "x = inode->i_refs;\n")
    head = commit_all(layout, "series")

    assert compile_check.other_arch_files(layout, base, head, None) == {
        "powerpc": ["arch/powerpc/platforms/cell/spufs/file.c"]}
    assert compile_check.other_arch_files(layout, base, head, r"\bi_(count|refs)\b") == {
        "arm": ["arch/arm/kernel/foo.c"],
        "powerpc": ["arch/powerpc/platforms/cell/spufs/file.c"]}
    # powerpc is compiled when Debian's cross compiler is there, arm never.
    monkeypatch.setattr(compile_check.shutil, "which",
                        lambda name: "/usr/bin/" + name if name.startswith("powerpc64") else None)
    assert compile_check.cross_compiler("powerpc").arch == "powerpc"
    assert compile_check.cross_compiler("arm") is None
    monkeypatch.setattr(compile_check.shutil, "which", lambda name: None)
    assert compile_check.cross_compiler("powerpc") is None
