"""``snap_undo.checkpoints`` used as PraisonAI's ``CheckpointService`` is used."""

import asyncio
import os

import pytest

import snap_undo

from snap_undo.checkpoints import (
    Checkpoint,
    CheckpointConfig,
    CheckpointEvent,
    CheckpointResult,
    CheckpointService,
)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def service(workspace, tmp_path):
    return CheckpointService(workspace_dir=str(workspace), storage_dir=str(tmp_path / "store"))


def test_the_praisonai_flow_end_to_end(service, workspace):
    events = []
    for event in CheckpointEvent:
        service.on(event, lambda data, e=event: events.append(e))

    async def flow():
        assert not service.is_initialized
        assert (await service.save("too early")).error == "Service not initialized"
        assert await service.initialize() and service.is_initialized
        assert service.git_dir == service.checkpoint_dir
        assert os.path.isdir(os.path.join(service.checkpoint_dir, "packs"))
        f = workspace / "main.py"
        f.write_text("print(1)\n")
        first = await service.save("Before refactoring", step=1)
        assert first.success and first.checkpoint.step == 1
        assert first.checkpoint.message == "[step-1] Before refactoring"
        nothing = await service.save("again")
        assert not nothing.success and nothing.error == "No changes to checkpoint"
        assert (await service.save("empty", allow_empty=True)).success
        f.write_text("print(2)\nprint(3)\n")
        second = await service.save("after", step=2)
        listed = await service.list_checkpoints()
        assert [c.id for c in listed][0] == second.checkpoint.id and len(listed) == 4
        assert listed[-1].message == "Initial checkpoint"
        diff = await service.diff(first.checkpoint.id, second.checkpoint.id)
        assert diff.files[0].path == "main.py" and diff.total_additions == 2
        f.write_text("print(4)\n")
        live = await service.diff()
        assert live.to_checkpoint is None and live.files[0].status == "modified"
        # restore saves the unsaved edit first, so nothing is lost.
        back = await service.restore(first.checkpoint.id)
        assert back.success and f.read_text() == "print(1)\n"
        # The unsaved edit was saved first: off the line now (redo can bring it), never lost.
        kept = snap_undo.Workspace(workspace, store=service.checkpoint_dir).log(all=True)
        assert any(s.message.startswith("unsaved changes") for s in kept.snapshots)
        by_step = await service.restore(step=2)
        assert by_step.checkpoint.id == second.checkpoint.id and f.read_text() == "print(2)\nprint(3)\n"
        assert (await service.restore(step=9)).error == "No checkpoint found for step 9"
        assert (await service.restore("a", step=1)).error.startswith("Provide either")
        line = [c.id for c in await service.list_checkpoints()]
        rewound = await service.rewind(1)
        assert rewound.success and rewound.checkpoint.id == line[1]
        assert (await service.rewind(0)).error == "steps must be >= 1"
        assert (await service.get_checkpoint(second.checkpoint.short_id)).id == second.checkpoint.id
        assert await service.get_checkpoint("ffffffff") is None
        assert (await service.get_checkpoint_by_step(1)).message.startswith("[step-1]")
        assert (await service.get_checkpoint_by_step(1)).to_dict()["step"] == 1
        assert await service.delete_all()
        assert not os.path.exists(service.checkpoint_dir) and not service.is_initialized

    run(flow())
    assert CheckpointEvent.INITIALIZED in events
    assert CheckpointEvent.CHECKPOINT_CREATED in events
    assert CheckpointEvent.CHECKPOINT_RESTORED in events


def test_protected_paths_are_refused_exactly_not_their_subdirectories(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    import snap_undo.checkpoints.service as service_module

    monkeypatch.setattr(service_module, "PROTECTED_PATHS", [str(home), "/"])
    store = str(tmp_path / "store")
    assert not run(CheckpointService(str(home), storage_dir=store).initialize())
    assert run(CheckpointService(str(home / "code"), storage_dir=store).initialize())
    assert not run(CheckpointService(str(tmp_path / "missing"), storage_dir=store).initialize())
    assert not run(CheckpointService(str(home / "code"), enabled=False).initialize())


def test_initialize_records_an_empty_initial_checkpoint_once(workspace, tmp_path):
    """PraisonAI's ``initialize()`` commits an empty "Initial checkpoint" (``git commit
    --allow-empty`` before anything is added): the first save records the files already
    there, as its example relies on; opening the store again records no second one."""
    (workspace / "already.txt").write_text("there before\n")
    store = str(tmp_path / "s")

    async def flow():
        service = CheckpointService(str(workspace), storage_dir=store)
        assert await service.initialize()
        (initial,) = await service.list_checkpoints()
        assert initial.message == "Initial checkpoint" and initial.files_changed == 0
        first = await service.save("Initial state")
        assert first.success and first.checkpoint.files_changed == 1, first.error
        assert (await service.save("nothing new")).error == "No changes to checkpoint"
        again = CheckpointService(str(workspace), storage_dir=store)
        assert await again.initialize()
        return await again.list_checkpoints()

    listed = run(flow())
    assert [c.message for c in listed] == ["Initial state", "Initial checkpoint"]
    assert (workspace / "already.txt").read_text() == "there before\n"


def test_restoring_the_empty_initial_checkpoint_loses_nothing(service, workspace):
    """Restoring to the empty initial checkpoint empties the directory, as PraisonAI's reset
    does; here it is an undo that saved the unsaved edit first, so snap brings all back."""
    f = workspace / "main.py"
    f.write_text("saved\n")

    async def flow():
        await service.initialize()
        saved = await service.save("Initial state")
        f.write_text("unsaved\n")
        initial = (await service.list_checkpoints())[-1]
        back = await service.restore(initial.id)
        assert back.success and back.checkpoint.message == "Initial checkpoint", back.error
        assert not f.exists() and sorted(os.listdir(workspace)) == []
        assert [c.id for c in await service.list_checkpoints()] == [initial.id]
        return saved

    saved = run(flow())
    ws = snap_undo.Workspace(workspace, store=service.checkpoint_dir)
    assert ws.redo(2).target.message.startswith("unsaved changes")
    assert f.read_text() == "unsaved\n"
    assert ws.cat(saved.checkpoint.id, "main.py").content == "saved\n"


def test_checkpoint_from_git_commit_as_praisonai_s():
    cp = Checkpoint.from_git_commit("abc123def456789", "Test message", "2024-01-01T00:00:00Z")
    assert (cp.id, cp.short_id, cp.message) == ("abc123def456789", "abc123de", "Test message")
    assert cp.timestamp.isoformat() == "2024-01-01T00:00:00+00:00" and cp.step is None
    naive = Checkpoint.from_git_commit("ab", "m", "2024-01-01T00:00:00")
    assert naive.timestamp.year == 2024


def test_max_checkpoints_caps_no_history(workspace, tmp_path):
    """PraisonAI: "rewind is not capped by max_checkpoints ... older commits stay
    reachable". Nothing is deleted; a rewind past the cap works."""
    service = CheckpointService(str(workspace), storage_dir=str(tmp_path / "s"), max_checkpoints=2)
    pruned = []
    service.on(CheckpointEvent.CHECKPOINTS_PRUNED, pruned.append)

    async def flow():
        await service.initialize()
        for i in range(5):
            (workspace / "f").write_text(str(i))
            assert (await service.save(f"save {i}")).success
        listed = await service.list_checkpoints()
        rewound = await service.rewind(4)
        return listed, rewound

    listed, rewound = run(flow())
    assert len(listed) == 6 and listed[0].message == "save 4"
    assert rewound.success and rewound.checkpoint.message == "save 0", rewound.error
    assert (workspace / "f").read_text() == "0"
    assert not pruned


def test_two_asyncio_tasks_checkpoint_at_once(service, workspace):
    async def flow():
        await service.initialize()

        async def task(i):
            (workspace / f"t{i}").write_text(str(i))
            return await service.save(f"task {i}", allow_empty=True)

        results = await asyncio.gather(task(1), task(2))
        assert all(r.success for r in results)
        assert len(await service.list_checkpoints()) == 3  # with the initial one

    run(flow())


def test_types_keep_praisonai_s_shapes():
    config = CheckpointConfig(workspace_dir="~/proj")
    assert config.workspace_dir == os.path.expanduser("~/proj")
    assert config.storage_dir.endswith(os.path.join(".praisonai", "checkpoints"))
    assert CheckpointResult.fail("boom").error == "boom" and not CheckpointResult.fail("boom").success
    assert set(Checkpoint.__dataclass_fields__) >= {
        "id", "short_id", "message", "timestamp", "files_changed", "insertions", "deletions", "step",
    }


def test_rewind_walks_back_one_call_after_another(service, workspace):
    """As PraisonAI's reset --hard does: each rewind(1) goes one further back, and the list
    then starts at the checkpoint rewound to."""

    async def flow():
        await service.initialize()
        ids = []
        for i in range(4):
            (workspace / "f").write_text(str(i))
            ids.append((await service.save(f"c{i}")).checkpoint.id)
        for expected in (ids[2], ids[1], ids[0]):
            rewound = await service.rewind(1)
            assert rewound.checkpoint.id == expected
            assert (await service.list_checkpoints())[0].id == expected
        assert (workspace / "f").read_text() == "0"
        # Then to the initial checkpoint, empty as PraisonAI's.
        initial = await service.rewind(1)
        assert initial.success and initial.checkpoint.message == "Initial checkpoint"
        assert not (workspace / "f").exists()
        assert not (await service.rewind(1)).success

    run(flow())
