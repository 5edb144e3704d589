"""One line per trial error that names what died or broke (rllib_fair.cli.errors).

The errors are built the way Ray hands them to Tune: the trainable's ``RayTaskError``
with the failed actor's traceback nested in its text. The texts are shortened copies
of the ones measured on this machine (a learner killed under ``num_learners=2``, an
env runner killed with ``restart_failed_env_runners: false``, a checkpoint written
to a full tmpfs, a truncated checkpoint restored in a remote trainable).
"""

from __future__ import annotations

import errno
import json
import pickle

import pytest

from rllib_fair.cli.errors import MAX_CHARS, explain_trial_error, find_unreadable_file
from rllib_fair.cli.summary import error_line

LEARNER_ADVICE = (
    "RLlib does not restart learners, so the trial stopped; continue from its last "
    "checkpoint with --resume"
)
RUNNER_ADVICE = (
    "failed runners are restarted only with restart_failed_env_runners: true (the "
    "default) and until max_num_env_runner_restarts is used up; continue from the last "
    "checkpoint with --resume"
)
CHECKPOINT_ADVICE = "restore the file, or move its checkpoint folder away to use an earlier one"
EXIT = (
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
    "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
    "file. Some common causes include: (1) the process was killed by the OOM killer"
)
GLOO = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:8840. This is typically caused by a remote "
    "worker crashing. Check the logs of the remote worker before reporting an error."
)


def task_error(cls: str, method: str, traceback_text: str, cause: BaseException):
    """A ``RayTaskError(<cause type>)`` as a failed remote call of ``cls.method`` raises."""
    from ray.exceptions import RayTaskError

    return RayTaskError(
        method,
        traceback_text,
        cause,
        proctitle=f"ray::{cls}.{method}",
        pid=28440,
        ip="192.0.2.2",
        actor_repr=f"{cls}(env=fair/Lending-v0)",
    ).as_instanceof_cause()


def actor_died(class_name: str, pid: int):
    from ray.core.generated.common_pb2 import ActorDiedErrorContext
    from ray.exceptions import ActorDiedError

    ctx = ActorDiedErrorContext(
        class_name=class_name, actor_id=b"\x01" * 16, pid=pid, error_message=EXIT
    )
    return ActorDiedError(ctx)


def trainable_traceback(*lines: str) -> str:
    frames = (
        "Traceback (most recent call last):\n"
        '  File ".../ray/rllib/algorithms/algorithm.py", line 1230, in step\n'
        "    train_results, train_iter_ctx = self._run_one_training_iteration()\n"
    )
    return frames + "\n".join(lines)


def check_one_line(line: str) -> str:
    assert "\n" not in line and len(line) <= MAX_CHARS, line
    return line


# -- a learner died --------------------------------------------------------------------


@pytest.mark.parametrize(
    "class_name",
    # Ray reports the class by its qualified name: RLlib's learners run in a class that
    # Ray Train defines inside a function
    ["create_executable_class.<locals>._WrappedExecutable", "_WrappedExecutable"],
)
def test_learner_actor_died_names_the_learner_and_its_pid(class_name):
    line = explain_trial_error(actor_died(class_name, 4242))
    assert check_one_line(line) == (
        "a learner process died (a Ray Train worker hosting a learner, pid 4242: Worker "
        "unexpectedly exits with a connection error code 2); " + LEARNER_ADVICE
    )


def test_learner_killed_mid_update_is_named_not_the_peer_socket_error():
    # what Tune reported when one of two learners was SIGKILLed during an update: the
    # surviving learner's collective call failed; the dead learner is nowhere named
    text = trainable_traceback(
        "ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray::_WrappedExecutable.apply()"
        "\x1b[39m (pid=28631, ip=192.0.2.2, actor_id=a72a, repr=<ray.train._internal."
        "worker_group._WrappedExecutable object at 0x7fd01aa1e850>)",
        '  File ".../torch/nn/parallel/distributed.py", line 2363, in '
        "_distributed_broadcast_coalesced",
        GLOO,
    )
    error = task_error("FairPPO", "train", text, RuntimeError(GLOO))
    assert error_line(error).startswith("RuntimeError: [/__w/pytorch")  # before: the symptom
    assert check_one_line(explain_trial_error(error)) == (
        "a learner process died: learner pid 28631 lost its connection to a peer learner "
        "(Connection closed by peer); " + LEARNER_ADVICE
    )


# -- an env runner died and was not restarted -------------------------------------------


def test_env_runner_actor_died_without_restart():
    died = actor_died("FairEnvRunner", 29181)
    expected = (
        "an env runner process died (FairEnvRunner, pid 29181: Worker unexpectedly exits "
        "with a connection error code 2) and RLlib did not restart it; " + RUNNER_ADVICE
    )
    assert check_one_line(explain_trial_error(died)) == expected
    # the same, reported by the trainable whose sample call failed (only as text)
    text = trainable_traceback(f"ray.exceptions.ActorDiedError: {died}")
    wrapped = task_error("FairPPO", "train", text, RuntimeError("sample failed"))
    assert explain_trial_error(wrapped) == expected


def test_env_runner_whose_env_raised_without_restart():
    text = trainable_traceback(
        "ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray::FairEnvRunner.apply()"
        "\x1b[39m (pid=777, ip=192.0.2.2, actor_id=cea7, repr=<FairEnvRunner>)",
        "RuntimeError: FlakyLending: simulated crash of the environment",
    )
    error = task_error("FairPPO", "train", text, RuntimeError("FlakyLending"))
    assert check_one_line(explain_trial_error(error)) == (
        "an env runner failed (FairEnvRunner, pid 777: RuntimeError: FlakyLending: "
        "simulated crash of the environment) and RLlib did not restart it; " + RUNNER_ADVICE
    )


def test_another_actor_of_the_trial_died():
    # the trainable's own process (it holds the learner when num_learners=0)
    assert check_one_line(explain_trial_error(actor_died("FairPPO", 31337))) == (
        "a process of the trial died (FairPPO, pid 31337: Worker unexpectedly exits with a "
        "connection error code 2); continue from the last checkpoint with --resume"
    )


# -- the storage is full ---------------------------------------------------------------


def test_no_space_left_while_saving_a_checkpoint():
    # pyarrow's copy into the storage path, as measured on a full 300 kB tmpfs
    message = "Error writing bytes to file. Detail: [errno 28] No space left on device"
    text = trainable_traceback(
        '  File ".../ray/train/_internal/storage.py", line 568, in persist_current_checkpoint',
        f"OSError: [Errno 28] {message}",
    )
    error = task_error("FairPPO", "save", text, OSError(errno.ENOSPC, message))
    assert check_one_line(explain_trial_error(error)) == (
        "storage full: no space left on the device while writing a checkpoint; free space "
        "on the storage path and continue with --resume (the checkpoints completed before "
        "this are intact)"
    )


def test_no_space_left_names_the_file():
    error = OSError(errno.ENOSPC, "No space left on device", "/data/run/trial/result.json")
    assert explain_trial_error(error) == (
        "storage full: no space left on the device while writing the run's files "
        "(/data/run/trial/result.json); free space on the storage path and continue with "
        "--resume (the checkpoints completed before this are intact)"
    )


def test_no_space_found_in_text_only():
    text = trainable_traceback(
        "OSError: [Errno 28] No space left on device: '/data/run/trial/checkpoint_000004/x.pkl'"
    )
    error = task_error("FairPPO", "train", text, RuntimeError("wrapped"))
    line = explain_trial_error(error)
    assert line.startswith(
        "storage full: no space left on the device while writing the run's files "
        "(/data/run/trial/checkpoint_000004/x.pkl)"
    ), line


# -- a checkpoint that cannot be read on restore ----------------------------------------


def write_checkpoint(folder):
    """A folder shaped like an algorithm checkpoint, with one learner state."""
    learner = folder / "learner_group" / "learner"
    learner.mkdir(parents=True)
    (folder / "rllib_checkpoint.json").write_text(json.dumps({"type": "Algorithm"}))
    (folder / "algorithm_state.pkl").write_bytes(pickle.dumps({"training_iteration": 3}))
    state = pickle.dumps({"weights": list(range(100))})
    (learner / "state.pkl").write_bytes(state)
    return learner / "state.pkl", state


def test_find_unreadable_file(tmp_path):
    state, data = write_checkpoint(tmp_path / "checkpoint_000002")
    assert find_unreadable_file(tmp_path / "checkpoint_000002") is None
    state.write_bytes(data[: len(data) // 2])
    assert find_unreadable_file(tmp_path / "checkpoint_000002") == state
    state.write_bytes(data)
    meta = tmp_path / "checkpoint_000002" / "rllib_checkpoint.json"
    meta.write_text('{"type": "Alg')
    assert find_unreadable_file(tmp_path / "checkpoint_000002") == meta
    meta.write_text("")
    assert find_unreadable_file(tmp_path / "checkpoint_000002") == meta
    assert find_unreadable_file(tmp_path / "missing") is None


def test_truncated_checkpoint_restored_in_a_remote_trainable(tmp_path):
    folder = tmp_path / "trial" / "checkpoint_000002"
    state, data = write_checkpoint(folder)
    state.write_bytes(data[: len(data) // 2])
    text = (
        "Traceback (most recent call last):\n"
        '  File ".../ray/tune/trainable/trainable.py", line 568, in restore\n'
        '  File ".../ray/rllib/algorithms/algorithm.py", line 3184, in load_checkpoint\n'
        '  File ".../ray/rllib/utils/checkpoints.py", line 414, in restore_from_path\n'
        "_pickle.UnpicklingError: pickle data was truncated"
    )
    error = task_error(
        "FairPPO", "restore", text, pickle.UnpicklingError("pickle data was truncated")
    )
    # the traceback does not name the file: the trial's checkpoint folder is checked
    assert check_one_line(explain_trial_error(error, checkpoint=str(folder))) == (
        f"checkpoint file {state} is corrupted or truncated (UnpicklingError: pickle data "
        f"was truncated); {CHECKPOINT_ADVICE}"
    )
    # without the folder: said as much as is known
    assert explain_trial_error(error) == (
        "checkpoint could not be read on restore (UnpicklingError: pickle data was "
        f"truncated); {CHECKPOINT_ADVICE}"
    )


def test_truncated_module_checkpoint_restored_here_names_the_file(tmp_path):
    # a real RLlib restore in this process: the file comes from its traceback
    import gymnasium as gym
    import numpy as np
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec

    spec = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        action_space=gym.spaces.Discrete(2),
        model_config={"fcnet_hiddens": [4]},
    )
    spec.build().save_to_path(tmp_path)
    state = tmp_path / "module_state.pkl"
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])
    with pytest.raises(pickle.UnpicklingError) as info:
        RLModule.from_checkpoint(tmp_path)
    assert explain_trial_error(info.value) == (
        f"checkpoint file {state} is corrupted or truncated (UnpicklingError: pickle data "
        f"was truncated); {CHECKPOINT_ADVICE}"
    )


# -- everything else: the last meaningful line -------------------------------------------


def test_other_errors_give_their_last_line_as_before():
    text = trainable_traceback("ValueError: lr must be positive")
    error = task_error("FairPPO", "train", text, ValueError("lr must be positive"))
    assert explain_trial_error(error) == error_line(error) == "ValueError: lr must be positive"
    plain = RuntimeError("first line\n  \nthe cause\n")
    assert explain_trial_error(plain) == error_line(plain) == "the cause"
    assert explain_trial_error(KeyError()) == "KeyError"


def test_a_decode_error_outside_a_restore_is_not_called_a_checkpoint():
    try:
        json.loads("{")
    except json.JSONDecodeError as e:
        line = explain_trial_error(e)
    assert line == "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"


def test_long_details_stay_on_one_line():
    text = trainable_traceback(
        "ray.exceptions.RayTaskError(RuntimeError): ray::FairEnvRunner.apply() (pid=5, ip=x)",
        "RuntimeError: " + "x" * 2000,
    )
    error = task_error("FairPPO", "train", text, RuntimeError("x"))
    check_one_line(explain_trial_error(error))
