"""Guarding a run folder for the life of one command: an exclusive lock, and a record of what the
command created there, so that a command that fails on bad input removes exactly that and nothing else.

It is a Hydra callback (``hydra.callbacks.run_folder`` in ``conf/hydra/default.yaml`` and
``conf/evaluate.yaml``) because Hydra creates the run folder and writes ``.hydra/`` and the log file
before the task function starts: ``on_run_start`` is the last moment at which the folder's earlier
contents, and whether it existed at all, can still be seen, and the first at which a second process
can be turned away before it writes anything.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path

from hydra.experimental.callback import Callback

from legalft.foundation import console
from legalft.foundation.errors import EXIT_BAD_INPUT, UserError
from legalft.evaluation import run_results
from legalft.foundation.io import TEMP_SUFFIX, atomic_write, created_paths, is_atomic_write_temp, new_command, note_created
from legalft.foundation.ranks import secondary_rank
from legalft.runs.lock import RunLock

log = logging.getLogger(__name__)

_active: "RunFolderGuard | None" = None


def listing(folder: Path) -> set[Path]:
    return set(folder.rglob("*")) if folder.is_dir() else set()


def links_leading_out(folder: Path) -> list[Path]:
    """Symbolic links in ``folder`` (outside W&B's ``wandb/``) whose target lies outside it. A command
    writes, appends to or truncates files in its run folder; through such a link it would change a
    file elsewhere."""
    if not folder.is_dir():
        return []
    root = folder.resolve()
    found = []
    for parent, dirs, files in os.walk(folder):  # os.walk does not follow links into folders
        if Path(parent) == folder and "wandb" in dirs:
            dirs.remove("wandb")  # W&B's own folder: it links its run logs to its cache, and the project writes nothing there
        for name in dirs + files:
            path = Path(parent) / name
            if path.is_symlink():
                target = path.resolve()
                if not (target == root or root in target.parents):
                    found.append(path)
    return sorted(found)


def leftover_temp_files(folder: Path) -> list[Path]:
    """Temporary files an earlier run of this folder left when it was killed mid-write (a partial
    checkpoint can be hundreds of MB). They are named, not removed: this command did not create them,
    and a command deletes only what it created itself."""
    leftovers = sorted(p for p in folder.rglob(f".*{TEMP_SUFFIX}") if p.is_file() and is_atomic_write_temp(p))
    if leftovers:
        size = sum(p.stat().st_size for p in leftovers) / 2**20
        log.warning("%d temporary file(s) (%.1f MiB) that an interrupted run left in %s are kept: %s. They hold "
                    "nothing a run reads; delete them when no run uses the folder.", len(leftovers), size, folder,
                    ", ".join(str(p.relative_to(folder)) for p in leftovers[:5]) + (" ..." if len(leftovers) > 5 else ""))
    return leftovers


class RunFolderGuard(Callback):
    """``enabled=false`` for commands without a run folder of their own (``report=compare``).
    ``existing_run``: ``evaluate.py run=DIR`` rescoring a run, whose folder must already be one."""

    def __init__(self, enabled: bool = True, existing_run: str | None = None) -> None:
        self.enabled = enabled
        self.existing_run = existing_run
        self.folder: Path | None = None
        self.created_folders: list[Path] = []  # the run folder and the parents this command created
        self.before: set[Path] = set()
        self.hydra_files: set[Path] = set()  # what Hydra is about to write there for this command
        self.hydra_records: dict[Path, bytes] = {}
        self.lock: RunLock | None = None
        self.single_run = False  # on_run_start claimed (or refused) the folder before Hydra created it

    # -- Hydra's hooks ----------------------------------------------------------------------------------
    def on_run_start(self, config, **kwargs) -> None:
        """Before Hydra creates the run folder: the settings are checked (``legalft.apps.config_checks``), then
        the folder is claimed."""
        self.single_run = True
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import OmegaConf

        from legalft.apps.config_checks import check_config

        def check_and_claim():
            new_command()  # what an earlier command in this process (a sweep's previous job) made is not this one's
            run_results.start_clock()
            HydraConfig.instance().set_config(config)  # run.dir may name ${hydra:...} values; run_job sets it too
            check_config(config)
            if self.enabled and not secondary_rank():
                self.claim(Path(str(OmegaConf.select(config, "hydra.run.dir"))).absolute(), config.hydra.output_subdir)

        exit_unless_claimed(check_and_claim)

    def on_job_start(self, config, **kwargs) -> None:
        """Multirun jobs: Hydra has already created the job's folder, so its own files stay."""
        if self.single_run:
            return
        from legalft.apps.config_checks import check_config

        def check_and_claim():
            new_command()  # what an earlier command in this process (a sweep's previous job) made is not this one's
            run_results.start_clock()
            check_config(config)
            if self.enabled and not secondary_rank():
                self.claim(Path(config.hydra.runtime.output_dir).absolute())

        exit_unless_claimed(check_and_claim)

    def on_job_end(self, config, job_return, **kwargs) -> None:
        self.release()  # the next job of a sweep in this process claims its own folder

    # -- the guard --------------------------------------------------------------------------------------
    def claim(self, folder: Path, hydra_subdir: str | None = None) -> None:
        """Lock ``folder`` and note what it holds. ``hydra_subdir``: where Hydra is about to record this
        command's config and overrides (``.hydra/``), over an earlier run's record: kept to put back."""
        global _active
        if self.existing_run is not None:
            from legalft.runs.saved_config import check_rescorable

            check_rescorable(folder)
        outward = links_leading_out(folder)
        if outward:
            shown = ", ".join(f"{p.relative_to(folder)} -> {os.readlink(p)}" for p in outward[:5])
            raise UserError(f"run folder {folder} holds symbolic links to files outside it ({shown}): a run writes "
                            "into its folder's files, and would change those. Remove the links, or choose another "
                            "run folder (leave hydra.run.dir unset for a new one).")
        self.created_folders = [p for p in (folder, *folder.parents) if not p.exists()]
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UserError(f"hydra.run.dir={folder}: cannot create the run folder ({err.strerror}).") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"hydra.run.dir={folder}: the folder is not writable; choose another run folder.")
        lock = RunLock(folder)
        lock_file_was_there = lock.path.exists()
        try:
            lock.acquire()
        except UserError:
            # Refused: this command wrote nothing here but the folders it made (empty unless the holder uses them).
            self.remove_created_folders()
            raise
        # Seen under the lock, so nothing an earlier holder wrote before letting go counts as this command's;
        # the lock file does when this command made it.
        self.lock, self.folder = lock, folder
        self.before = listing(folder) - (set() if lock_file_was_there else {lock.path})
        records = folder / hydra_subdir if hydra_subdir else None
        self.hydra_records = {p: p.read_bytes() for p in records.glob("*.yaml")} if records and records.is_dir() else {}
        if records is not None:  # Hydra writes its record of this command right after this hook
            self.hydra_files = {records / name for name in ("config.yaml", "hydra.yaml", "overrides.yaml")} | {records}
        if not lock_file_was_there:
            note_created(lock.path)
        leftover_temp_files(folder)
        _active = self
        console.undo_on_bad_input(undo_created)

    def written_by_this_command(self, path: Path) -> bool:
        """New since the claim and made by this command: noted by the project's writers (``legalft.foundation.io``),
        inside a folder they noted, or Hydra's record of the command. A file that appeared otherwise (a
        user saving into the folder meanwhile) is not."""
        noted = created_paths() | self.hydra_files
        return path not in self.before and any(p in noted for p in (path, *path.parents))

    def undo(self) -> None:
        """Remove what this command created in its run folder, then the folders it created, if empty."""
        folder = self.folder
        if folder is None:
            return
        new = sorted(listing(folder) - self.before, key=lambda p: len(p.parts), reverse=True)
        emptied: set[Path] = set()  # new folders (made by a library we called) that held only our files
        for path in new:  # deepest first, so folders are empty when their turn comes
            try:
                if self.written_by_this_command(path) or (path in emptied and not any(path.iterdir())):
                    if path.is_dir() and not path.is_symlink():
                        path.rmdir()
                    else:
                        path.unlink()
                    emptied.add(path.parent)
            except OSError:
                pass  # a folder this command created that now holds something it did not write
        for path, content in self.hydra_records.items():  # the earlier run's record of its config
            if not path.exists() or path.read_bytes() != content:
                atomic_write(path, lambda tmp, content=content: tmp.write_bytes(content))
        self.release()
        self.remove_created_folders()

    def remove_created_folders(self) -> None:
        for path in self.created_folders:  # innermost first; one that holds anything stays, with its parents
            try:
                path.rmdir()
            except OSError:
                break

    def release(self) -> None:
        global _active
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if _active is self:
            _active = None
            console.undo_on_bad_input(None)
        self.folder = None


def exit_unless_claimed(claim) -> None:
    """Hydra turns a callback's exception into a warning and runs the job anyway: an unguarded run
    folder is not an option, so a failure here ends the command (bad input with the entry points' message)."""
    try:
        claim()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None
    except Exception:
        traceback.print_exc()
        raise SystemExit(1) from None


def undo_created() -> None:
    """What the entry points call when a command fails on bad input (no guard: nothing to undo)."""
    if _active is not None:
        _active.undo()
