"""The typed wrapper on a real workspace, through the installed binary."""

import asyncio
import os
import subprocess
import sys

import pytest

import snap_undo
from snap_undo import AsyncWorkspace, NothingToDo, SnapError, Workspace


def test_find_bin_is_the_wheel_s_binary_and_python_m_runs_it(snap_bin):
    assert os.path.isabs(snap_bin) and os.access(snap_bin, os.X_OK)
    assert os.path.basename(snap_bin) == "snap-undo"
    out = subprocess.run([sys.executable, "-m", "snap_undo", "--version"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("snap-undo ")


def test_the_wheel_ships_the_terminal_ui_beside_the_binary(snap_bin, workspace):
    ui = os.path.join(os.path.dirname(snap_bin), "snap-undo-ui")
    assert os.access(ui, os.X_OK), f"{ui} is missing from the wheel"
    # Without a terminal it refuses in one line, as `snap-undo ui` (which runs it) does.
    out = subprocess.run([snap_bin, "-C", str(workspace), "ui"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("error: snap ui needs a terminal"), out.stderr


def test_save_status_log_show_cat_diff_verify_are_typed(workspace):
    (workspace / "a.txt").write_text("one\n")
    ws = Workspace(workspace)
    first = ws.save("first", step=1, session="chat", meta={"tool": "edit"})
    assert first.created and first.snapshot.seq == 1
    assert first.snapshot.meta == {"tool": "edit"} and first.snapshot.session == "chat"
    assert [c.path for c in first.changes] == ["a.txt"]
    assert ws.save("again").created is False
    (workspace / "a.txt").write_text("one\ntwo\n")
    status = ws.status()
    assert not status.clean and status.changes[0].status == "modified"
    ws.save("second")
    log = ws.log()
    assert [s.message for s in log.snapshots] == ["second", "first"]
    assert log.snapshots[0].is_head and log.snapshots[0].stats.lines_added == 1
    assert ws.show("#1").message == "first"
    assert ws.cat("#1", "a.txt").content == "one\n"
    diff = ws.diff("#1", "#2")
    assert diff.files[0].path == "a.txt" and diff.files[0].added == 1
    assert ws.verify().ok


def test_undo_redo_and_exit_codes(workspace):
    ws = Workspace(workspace)
    (workspace / "f").write_text("1")
    ws.save("one")
    (workspace / "f").write_text("2")
    ws.save("two")
    preview = ws.undo(dry_run=True)
    assert preview.dry_run and (workspace / "f").read_text() == "2"
    undone = ws.undo()
    assert undone.target.message == "one" and (workspace / "f").read_text() == "1"
    assert ws.redo().target.message == "two"
    nothing = ws.redo()
    assert isinstance(nothing, NothingToDo) and "redo" in nothing.reason
    with pytest.raises(SnapError) as err:
        ws.show("nope")
    assert err.value.exit_code == 1 and "nope" in err.value.message
    restored = ws.restore("#1")
    assert restored.created is not None and (workspace / "f").read_text() == "1"
    back = ws.undo(to="#1")
    assert back.target.seq == 1 and ws.redo().op == "redo"


def test_verify_reports_damage_as_a_result(workspace):
    ws = Workspace(workspace)
    (workspace / "f").write_text("x" * 1000)
    ws.save("one")
    pack = next((workspace / ".snap" / "packs").iterdir())
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.write_bytes(bytes(data))
    report = ws.verify(read_data=True)
    assert not report.ok and report.problems


def test_async_workspace_from_two_tasks_loses_nothing(workspace):
    ws = AsyncWorkspace(workspace)

    async def run():
        async def one(i):
            (workspace / f"f{i}").write_text(str(i))
            return await ws.save(f"task {i}", allow_empty=True)

        results = await asyncio.gather(*(one(i) for i in range(4)))
        assert all(r.snapshot is not None for r in results)
        log = await ws.log(all=True)
        assert {f"task {i}" for i in range(4)} <= {s.message for s in log.snapshots}
        assert (await ws.status()).clean
        assert isinstance(await ws.redo(), NothingToDo)

    asyncio.run(run())


def test_a_store_elsewhere(workspace, tmp_path):
    store = tmp_path / "stores" / "one"
    (workspace / "x").write_text("x")
    ws = Workspace(workspace, store=str(store))
    assert ws.save("elsewhere").created
    assert (store / "packs").is_dir() and not (workspace / ".snap").exists()
    assert snap_undo.Workspace(workspace, store=str(store)).show().message == "elsewhere"


def _readme_python_block():
    """The first ```python block of python/README.md."""
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_undoes_in_a_fresh_directory(workspace, monkeypatch, capsys):
    """python/README.md's first example, run as it is in a directory with no store: init
    saves a baseline, so the undo after a save takes the edit back (and redo returns it)."""
    monkeypatch.chdir(workspace)
    block = _readme_python_block()
    assert "ws.undo()" in block and "Workspace.init" in block
    exec(compile(block, "python/README.md", "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out
    assert printed.startswith("MoveResult(") and "NothingToDo" not in printed, printed
    assert (workspace / "notes.txt").read_text() == "draft\n"
    log = Workspace(workspace).log()
    assert [s.message for s in log.snapshots] == ["after edit", "baseline"]


def test_init_saves_a_baseline_only_in_a_new_store(workspace):
    (workspace / "a.txt").write_text("one\n")
    ws = Workspace.init(workspace)
    baseline = ws.show()
    assert baseline.message == "baseline" and baseline.stats.files == 1
    (workspace / "a.txt").write_text("two\n")
    assert Workspace.init(workspace).status().changes[0].path == "a.txt"  # nothing saved
    assert [s.message for s in ws.log(all=True).snapshots] == ["baseline"]
    ws.save("edit")
    assert ws.undo().target.id == baseline.id and (workspace / "a.txt").read_text() == "one\n"
    bare = workspace.parent / "bare"
    bare.mkdir()
    assert Workspace.init(bare, baseline=False).status().head is None


def test_async_init_creates_the_store_with_a_baseline(workspace):
    from snap_undo import AsyncWorkspace

    async def flow():
        ws = await AsyncWorkspace.init(workspace)
        again = await AsyncWorkspace.init(workspace)
        bare = workspace.parent / "bare"
        bare.mkdir()
        plain = await AsyncWorkspace.init(bare, baseline=False)
        return await ws.status(), await again.log(all=True), await plain.status()

    status, log, plain = asyncio.run(flow())
    assert status.head is not None and status.head == log.snapshots[0].id
    assert log.snapshots[0].message == "baseline" and len(log.snapshots) == 1
    assert status.changes == [] and os.path.isdir(workspace / ".snap") and plain.head is None


def test_the_top_readme_one_liner_works_in_a_fresh_directory(workspace, monkeypatch):
    """README.md's Python line, run in a directory with no store."""
    import snap_undo

    monkeypatch.chdir(workspace)
    status = snap_undo.Workspace.init(".").status()
    assert status.changes == [] and os.path.isdir(workspace / ".snap")
