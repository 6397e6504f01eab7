"""cntkio.endtoend.baseline: the facts of a CNTK baseline log (the lines CNTK 2.x writes)."""
import json
import os

from cntkio.endtoend.baseline import RunFacts, read_baseline, run_facts
from cntkio.endtoend.runner import RunOutcome

LOG = """CPU info:
    CPU Model Name: Intel(R) Xeon(R) CPU
-------------------------------------------------------------------
=== Running /bin/cntk configFile=/t/Speech/QuickE2E/cntk.cntk currentDirectory=/d
12/15/2016 08:32:44: Commands: speechTrain
12/15/2016 08:32:44: Training criterion:   CrossEntropyWithSoftmax = CrossEntropyWithSoftmax
12/15/2016 08:32:44: Evaluation criterion: EvalClassificationError = ClassificationError
12/15/2016 08:32:50: Finished Epoch[ 1 of 3]: [Training] CrossEntropyWithSoftmax = 3.04 * 20480; totalSamplesSeen = 20480
12/15/2016 08:32:50: Finished Epoch[ 1 of 3]: [Validate] CrossEntropyWithSoftmax = 3.1 * 100
12/15/2016 08:32:52: Finished Epoch[ 2 of 3]: [Training] CrossEntropyWithSoftmax = 2.02 * 20480
12/15/2016 08:32:54: Finished Epoch[ 3 of 3]: [Training] CrossEntropyWithSoftmax = 1.96 * 20480
12/15/2016 08:32:54: Action "train" complete.
12/15/2016 08:32:54: __COMPLETED__
=== Running /bin/cntk configFile=/t/a.cntk+/t/b.cntk makeMode=true
MPI Rank 0: 08/16/2016 03:20:03: Training criterion node(s):
MPI Rank 0: 08/16/2016 03:20:03: \tce = CrossEntropyWithSoftmax
MPI Rank 0: 
MPI Rank 0: 08/16/2016 03:20:03: Evaluation criterion node(s):
MPI Rank 0: 08/16/2016 03:20:03: \terr = ClassificationError
MPI Rank 0: 08/16/2016 03:20:03: \ttop5 = ClassificationError
MPI Rank 1: 08/16/2016 03:20:03: Training criterion node(s):
MPI Rank 1: 08/16/2016 03:20:03: \tother = CrossEntropyWithSoftmax
MPI Rank 0: Finished Epoch[ 3 of 3]: [Training] ce = 1.9 * 20480
MPI Rank 1: Finished Epoch[ 3 of 3]: [Training] ce = 1.9 * 20480
MPI Rank 0: Action "train" complete.
MPI Rank 0: Action "edit" complete.
"""


def test_runs_and_their_facts():
    first, second = read_baseline(LOG.replace("\\t", "\t"))
    assert first == RunFacts(configs=["cntk.cntk"], commands=["speechTrain"], actions=["train"],
                             training_criteria=["CrossEntropyWithSoftmax"],
                             evaluation_criteria=["EvalClassificationError"], epochs=[[3, 3]], completed=True)
    # rank 0 only; the older "criterion node(s):" form; no __COMPLETED__
    assert second == RunFacts(configs=["a.cntk", "b.cntk"], commands=[], actions=["train", "edit"],
                              training_criteria=["ce"], evaluation_criteria=["err", "top5"], epochs=[[3, 1]],
                              completed=False)


def test_a_log_without_run_lines_is_one_run():
    (run,) = read_baseline("Commands: a b\nAction \"test\" complete.\nAction \"write\" complete.\n__COMPLETED__\n")
    assert run.commands == ["a", "b"] and run.actions == ["test", "write"] and run.completed


def test_two_train_commands_of_one_run_count_apart():
    text = ("Finished Epoch[ 1 of 2]: [Training] a\nFinished Epoch[ 2 of 2]: [Training] a\nAction \"train\" complete.\n"
            "Finished Epoch[ 1 of 2]: [Training] a\nAction \"train\" complete.\n")
    (run,) = read_baseline(text)
    assert run.epochs == [[2, 2], [2, 1]]


def test_the_facts_round_trip_through_json():
    (run,) = read_baseline("Commands: x\n")
    assert RunFacts.from_dict(json.loads(json.dumps(run.to_dict()))) == run


class _Result:
    def __init__(self, totals, n):
        self.totals = totals
        self.max_epochs = n


class _Train:
    def __init__(self, n, done):
        self.max_epochs = n
        self.epochs = [_Result({"ce": 1.0, "err": 0.5}, n) for _ in range(done)]


def test_the_facts_of_a_cntkio_run():
    out = RunOutcome(argv=["configFile=/x/a.cntk+/x/b.cntk"],
                     results=[("t", "train", _Train(3, 3)), ("e", "test", object()), ("e", "write", {})])
    facts = run_facts(out)
    assert facts == RunFacts(configs=["a.cntk", "b.cntk"], commands=["t", "e"], actions=["train", "test", "write"],
                             training_criteria=["ce"], evaluation_criteria=["err"], epochs=[[3, 3]], completed=True)


def test_the_vendored_facts_are_those_of_the_vendored_baselines():
    # baseline_facts.json was written by vendor_corpus.py: spot-check two of CNTK's logs
    with open(os.path.join(os.path.dirname(__file__), "corpus", "baseline_facts.json")) as f:
        facts = json.load(f)
    simple = facts["Tests/EndToEndTests/Simple2d/OneHidden"]
    assert simple["baseline"].endswith("baseline.cpu.txt")
    assert simple["runs"] == [{"configs": ["OneHidden.cntk"], "commands": ["Simple_Demo_Train", "Simple_Demo_Test",
                                                                           "Simple_Demo_Output"],
                               "actions": ["train", "test", "write"], "training_criteria": ["CrossEntropyWithSoftmax"],
                               "evaluation_criteria": ["EvalClassificationError"], "epochs": [[3, 3]],
                               "completed": True}]
    multitask = facts["Tests/EndToEndTests/Examples/Speech/TIMIT/TrainMultiTask"]["runs"][0]
    assert multitask["training_criteria"] == ["ObjFcn.O"]
    assert multitask["evaluation_criteria"] == ["CE1", "FER1", "CE2", "FER2"]


def test_the_evaluation_criteria_list_of_cntk_2_logs():
    # Tests/EndToEndTests/Examples/Image/Deprecated/MNIST/01_OneHidden_ndl/baseline.txt:138-142
    log = ("09/29/2016 22:45:58: Training criterion:   ce = CrossEntropyWithSoftmax\n"
           "09/29/2016 22:45:58: \n"
           "09/29/2016 22:45:58: Evaluation criteria:\n"
           "09/29/2016 22:45:58: \ttop5Errs = ClassificationError\n"
           "09/29/2016 22:45:58: \terrs = ClassificationError\n"
           "09/29/2016 22:45:58: No PreCompute nodes found, or all already computed. Skipping pre-computation step.\n")
    (run,) = read_baseline(log)
    assert run.training_criteria == ["ce"]
    assert run.evaluation_criteria == ["top5Errs", "errs"]
