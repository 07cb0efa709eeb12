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


def test_a_private_header_is_found_by_path_not_by_name(layout):
    write(layout, "fs/internal.h", "old\n")
    write(layout, "mm/internal.h", "other\n")
    write(layout, "fs/super.c", '#include "internal.h"\n')
    write(layout, "fs/nfs/inode.c", '#include "../internal.h"\n')
    write(layout, "mm/vmscan.c", '#include "internal.h"\n')
    write(layout, "include/trace/events/filelock.h", "old\n")
    write(layout, "fs/locks.c", "#include <trace/events/filelock.h>\n")
    base = commit_all(layout, "base")
    write(layout, "fs/internal.h", "new\n")
    write(layout, "include/trace/events/filelock.h", "new\n")
    head = commit_all(layout, "series")
    # mm/vmscan.c includes mm/internal.h, which the series did not touch.
    assert compile_check.files_to_compile(layout, base, head, None) == [
        "fs/locks.c", "fs/nfs/inode.c", "fs/super.c"]


def test_a_series_result_is_kept_beside_the_series(layout):
    import json

    from harness.kernels import series
    from harness.tests.conftest import INFO, add_patch

    add_patch(layout, "piggin", "0001-a.patch", subject="a", old="line two", new="line 2")
    kernel = series.resolve(layout, "piggin")
    result = compile_check.CompileResult("piggin", "allmodconfig", ("fs/a.c", "fs/b.c"),
                                         ("fs/b.c",), (), 5000, "log", 12.5)
    path = compile_check.keep(layout, kernel, INFO, None, result)
    assert path == layout.series_dir("piggin") / compile_check.RESULT_FILE
    compile_check.keep(layout, kernel, INFO, r"\bi_refs\b", result)
    again = compile_check.CompileResult("piggin", "allmodconfig", ("fs/a.c",), (), (), 5000,
                                        "log", 3.0)
    compile_check.keep(layout, kernel, INFO, None, again)  # replaces the one without pattern
    entries = json.loads(path.read_text())
    assert [(e["grep"], e["files"], e["failed"]) for e in entries] == [
        ("", ["fs/a.c"], []), (r"\bi_refs\b", ["fs/a.c", "fs/b.c"], ["fs/b.c"])]
    assert all(e["patch_digest"] == kernel.patch_digest for e in entries)
