"""Judge quality computed column-wise: the figures of `quality.version_quality`, for the pages that compute
them on every view.

`version_quality` states each figure pair by pair: an Observation per verdict, a Pair per scored target,
the outcome rule once per row. At 100k targets those objects cost seconds per view, so the quality pages
compute the same figures here, on arrays that `quality_reads` fills: a target is a position, an answer
or a gold label is the code of one of a few distinct kinds whose outcome is worked out once, a target's
gold and review item are found for every target at once (`KeyIndex`), and each report is handed to
`scoring` as label positions and conversation ids (`classification.coded_classification_report`).

The pairs are taken in the order `version_quality` visits them (the version's targets in (conversation,
turn) order, resolved pairs before unresolved ones), so every figure, bootstrap draw and floating-point
sum is the one it gives: tests/reviewapp/quality/test_quality_columns.py holds the two equal on a mixture
of scales, versions, runs, unresolved verdicts, refused and converted labels and gold sources.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reviewapp.models import Judge, JudgeVersion, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.quality_estimates import PassRate, QaEstimate, RunRow, Runs, _passes
from reviewapp.quality.selectors.quality_pairs import PairCounts
from reviewapp.quality.selectors.quality_slice import (
    CONVENTIONS,
    UNRESOLVED_LABEL,
    Gold,
    Slice,
    TargetKey,
    slice_labels,
)
from scoring import agreement, classification, estimates
from scoring import outcomes as scoring_outcomes
from scoring.lazy import lazy_import

if TYPE_CHECKING:
    import numpy as np

    from reviewapp.quality.selectors.quality import VersionQuality
else:
    np = lazy_import("numpy")

# A verdict's status as a small number: the three a judge's answer can have (quality_slice.RATED), and
# OTHER for any other (a target the judge did not rate).
STATUS_CODE = {Verdict.Status.RESOLVED: 0, Verdict.Status.UNRESOLVED: 1, Verdict.Status.ERROR: 2}
OTHER = 3
NO_LABEL = -1  # no gold for the target, or no outcome for the answer
REFUSED = -2  # gold whose label gives the judge no outcome
NO_TURN = -1  # a conversation-level target's turn


# --- labels, answers, keys --------------------------------------------------------------------------------


class Labels:
    """Outcome labels numbered as they are met, shared by one judge's gold and verdicts."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, label: str) -> int:
        found = self.code.get(label)
        if found is None:
            found = self.code[label] = len(self.names)
            self.names.append(label)
        return found


@dataclass
class Answers:
    """The distinct answers (status, rating, passed, label) of one judge's verdicts, each with its outcome."""

    judge: Judge
    labels: Labels
    known: dict[tuple, int] = field(default_factory=dict)
    status: list[int] = field(default_factory=list)
    value: list[int] = field(default_factory=list)  # label code, NO_LABEL when not resolved or refused
    refused: list[str] = field(default_factory=list)
    conversion: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.outcome = outcomes.Outcomes(self.judge, "judge")

    def add(self, status: str, rating: float | None, passed: bool | None, label: str) -> int:
        """A new answer's code (callers tell answers apart; `codes` does it for database rows)."""
        said = self.outcome(rating, passed, label) if status == Verdict.Status.RESOLVED else None
        self.status.append(STATUS_CODE.get(status, OTHER))
        self.value.append(self.labels(said.value) if said is not None and said.value is not None else NO_LABEL)
        self.refused.append(said.refused if said is not None else "")
        self.conversion.append(said.conversion if said is not None else "")
        return len(self.status) - 1

    def codes(self, keys: Sequence[tuple]) -> list[int]:
        """The answer code of each (status, rating, passed, label) in `keys`."""
        known = self.known
        if outcomes.all_keyable([key[1] for key in keys]):
            for key in set(keys) - known.keys():
                known[key] = self.add(*key)
            return list(map(known.__getitem__, keys))
        # -0.0 and 0.0 (or two NaN) are one dict key but not always one outcome: those rows are coded apart.
        return [self._code(key) for key in keys]

    def _code(self, key: tuple) -> int:
        if not outcomes.keyable(key[1]):
            return self.add(*key)
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = self.add(*key)
        return found

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per answer code: status, outcome label code, resolved without an outcome, converted."""
        status = np.array(self.status, dtype=np.int8)
        value = np.array(self.value, dtype=np.intp)
        converts = np.array([bool(said) for said in self.conversion], dtype=bool)
        return status, value, (status == 0) & (value == NO_LABEL), converts


def _packed(conversation: np.ndarray, turn: np.ndarray) -> np.ndarray | None:
    """One int64 per (conversation, turn), or None when the ids are too large to share one."""
    if not len(conversation):
        return np.zeros(0, dtype=np.int64)
    if conversation.min() < 0 or conversation.max() >= 2**31 or turn.min() < NO_TURN or turn.max() >= 2**32 - 1:
        return None
    return conversation.astype(np.int64) * 2**32 + (turn.astype(np.int64) + 1)


class KeyIndex:
    """Rows keyed by (conversation, turn), found again for many keys at once."""

    def __init__(self, conversation: np.ndarray, turn: np.ndarray) -> None:
        self.size = len(conversation)
        packed = _packed(conversation, turn)
        self.by_pair: dict[tuple[int, int], int] | None = None
        if packed is None:
            self.by_pair = dict(
                zip(zip(conversation.tolist(), turn.tolist(), strict=True), range(self.size), strict=True)
            )
            return
        self.rows = np.argsort(packed, kind="stable")
        self.keys = packed[self.rows]

    def find(self, conversation: np.ndarray, turn: np.ndarray, missing: int) -> np.ndarray:
        """Each key's row, or `missing`."""
        packed = None if self.by_pair is not None else _packed(conversation, turn)
        if packed is None:
            by_pair = self.by_pair
            if by_pair is None:
                by_pair = dict(zip(zip(*self._pairs(), strict=True), range(self.size), strict=True))
            pairs = zip(conversation.tolist(), turn.tolist(), strict=True)
            return np.fromiter((by_pair.get(p, missing) for p in pairs), dtype=np.intp, count=len(conversation))
        if not self.size:
            return np.full(len(conversation), missing, dtype=np.intp)
        at = np.minimum(np.searchsorted(self.keys, packed), self.size - 1)
        return np.where(self.keys[at] == packed, self.rows[at], missing)

    def _pairs(self) -> tuple[list[int], list[int]]:
        order = np.argsort(self.rows, kind="stable")
        keys = self.keys[order]
        return (keys // 2**32).tolist(), (keys % 2**32 - 1).tolist()


def pairs_of(targets: Iterable[TargetKey]) -> tuple[np.ndarray, np.ndarray]:
    """(conversation, turn) keys as two arrays, a missing turn as NO_TURN."""
    listed = list(targets)
    conversation = np.array([c for c, _ in listed], dtype=np.int64)
    turn = np.array([NO_TURN if t is None else t for _, t in listed], dtype=np.int64)
    return conversation, turn


# --- what is read -------------------------------------------------------------------------------------------


@dataclass
class VersionVerdicts:
    """One version's verdicts on the slice: its targets in (conversation, turn) order with the reference
    verdict's answer of each (the first run of the latest sweep), and every verdict when runs are wanted."""

    conversation: np.ndarray  # per target; also the bootstrap's clusters
    turn: np.ndarray  # NO_TURN for a conversation-level target
    language: np.ndarray  # code in `languages`
    languages: list[str]
    answer: np.ndarray  # answer code of the reference verdict
    sub_scores: list[dict] | None = None  # the reference verdict's, for weighted judges
    # Every verdict of the version (for its runs), in reading order: its target's position, sweep, run, answer.
    run_target: np.ndarray | None = None
    run_sweep: np.ndarray | None = None
    run_index: np.ndarray | None = None
    run_answer: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.conversation)

    def language_of(self, positions: np.ndarray) -> list[str]:
        names = self.languages
        return [names[code] for code in self.language[positions].tolist()]


def no_verdicts(*, runs: bool = False) -> VersionVerdicts:
    nothing = np.zeros(0, dtype=np.intp)
    empty = VersionVerdicts(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), nothing, [], nothing)
    if runs:
        empty.run_target = empty.run_sweep = empty.run_index = empty.run_answer = nothing
    return empty


def version_verdicts(
    version: np.ndarray,
    conversation: np.ndarray,
    turn: np.ndarray,
    sweep: np.ndarray,
    run: np.ndarray,
    answer: np.ndarray,
    language: np.ndarray,
    languages: list[str],
    *,
    version_ids: Sequence[int],
    runs_of: int | None,
    sub_scores: Sequence[dict] | None = None,
) -> dict[int, VersionVerdicts]:
    """Verdict rows (in version, conversation, turn, latest sweep, run order) cut into one VersionVerdicts
    per version: a row opens a target when its version, conversation or turn differs from the row before,
    and that first row is the target's reference. `sub_scores`, given per row, are kept per reference."""
    out: dict[int, VersionVerdicts] = {}
    n = len(version)
    if n:
        opens = np.ones(n, dtype=bool)
        opens[1:] = (version[1:] != version[:-1]) | (conversation[1:] != conversation[:-1]) | (turn[1:] != turn[:-1])
        firsts = np.flatnonzero(opens)
        bounds = np.flatnonzero(np.concatenate(([True], version[1:] != version[:-1]))).tolist()
        for lo, hi in zip(bounds, [*bounds[1:], n], strict=True):
            pk = int(version[lo])
            opening = firsts[np.searchsorted(firsts, lo) : np.searchsorted(firsts, hi)]
            result = VersionVerdicts(
                conversation=conversation[opening],
                turn=turn[opening],
                language=language[opening],
                languages=languages,
                answer=answer[opening],
                sub_scores=[dict(sub_scores[i] or {}) for i in opening.tolist()] if sub_scores is not None else None,
            )
            if pk == runs_of:
                result.run_target = np.cumsum(opens[lo:hi]) - 1
                result.run_sweep = sweep[lo:hi]
                result.run_index = run[lo:hi]
                result.run_answer = answer[lo:hi]
            out[pk] = result
    for pk in version_ids:
        out.setdefault(pk, no_verdicts(runs=pk == runs_of))
    return out


@dataclass
class GoldColumns:
    """A judge's winning gold (as `quality_slice.judge_gold` reads it): row r is one target's gold, and
    one row more, last, stands for "no gold"."""

    index: KeyIndex
    kind: np.ndarray  # row -> its Gold in `kinds`
    kinds: list[Gold]
    code: np.ndarray  # row -> label code; REFUSED when the label gives no outcome; NO_LABEL for no gold
    converts: np.ndarray  # row -> its label was converted by a stated rule

    @classmethod
    def of(cls, conversation: np.ndarray, turn: np.ndarray, kind: Sequence[int], kinds: list[Gold], labels: Labels):
        kind_code = [labels(g.outcome) if g.outcome is not None else REFUSED for g in kinds]
        rows = np.array([*kind, len(kinds)], dtype=np.intp)
        return cls(
            index=KeyIndex(conversation, turn),
            kind=rows,
            kinds=kinds,
            code=np.array([*kind_code, NO_LABEL], dtype=np.intp)[rows],
            converts=np.array([bool(g.conversion) for g in kinds] + [False], dtype=bool)[rows],
        )

    @property
    def size(self) -> int:
        return self.index.size

    def of_row(self, row: int) -> Gold:
        return self.kinds[self.kind[row]]

    def rows(self, verdicts: VersionVerdicts, excluded: set[TargetKey]) -> np.ndarray:
        """Each target's gold row, or the "no gold" row; the targets a version was drafted from have none
        (leakage.held_out)."""
        rows = self.index.find(verdicts.conversation, verdicts.turn, self.size)
        if excluded:
            left_out = KeyIndex(*pairs_of(excluded)).find(verdicts.conversation, verdicts.turn, -1) >= 0
            rows[left_out] = self.size
        return rows

    def count(self, targets: Iterable[TargetKey]) -> int:
        """How many of these targets have gold."""
        conversation, turn = pairs_of(targets)
        return int(np.count_nonzero(self.index.find(conversation, turn, -1) >= 0))


@dataclass
class Items:
    """The review items of the slice's targets, as what the figures need of them; the last row stands for
    "no item" (weight 1, not sampled, not disputed)."""

    index: KeyIndex
    weight: np.ndarray  # the pair's weight: the item's sample weight
    probability: np.ndarray  # inclusion probability in the QA sample
    qa: np.ndarray
    disputed: np.ndarray

    def rows(self, verdicts: VersionVerdicts) -> np.ndarray:
        return self.index.find(verdicts.conversation, verdicts.turn, len(self.weight) - 1)


# --- one version's figures ------------------------------------------------------------------------------------


def _in_first_order(events: list[tuple[int, str]]) -> Counter:
    """A Counter of the events' names with its keys in the order of their first event: the Counter that
    counting the events one by one, in order, gives."""
    first: dict[str, int] = {}
    counts: Counter = Counter()
    for place, name in events:
        counts[name] += 1
        if name not in first or place < first[name]:
            first[name] = place
    return Counter({name: counts[name] for name in sorted(first, key=first.__getitem__)})


@dataclass
class Columns:
    """One version's targets against gold, a position per target, and its scored pairs."""

    judge: Judge
    labels: Labels
    verdicts: VersionVerdicts
    status: np.ndarray  # reference verdict per target: 0 resolved, 1 unresolved, 2 failed
    value: np.ndarray  # its outcome label code (NO_LABEL when none)
    judge_refused: np.ndarray  # resolved, yet no outcome
    gold_row: np.ndarray
    gold_code: np.ndarray
    item_row: np.ndarray  # the target's review item row (read when the version is shown in detail)
    counts: PairCounts
    resolved_pairs: np.ndarray  # target positions of the scored pairs whose verdict is resolved
    unresolved_pairs: np.ndarray  # ... and of those whose verdict is unresolved or failed (gold scored)

    def under(self, convention: str) -> np.ndarray:
        if convention == "excluded":
            return self.resolved_pairs
        return np.concatenate((self.resolved_pairs, self.unresolved_pairs))


def columns_of(
    judge: Judge,
    verdicts: VersionVerdicts,
    answers: Answers,
    gold: GoldColumns,
    *,
    excluded: set[TargetKey] | None = None,
    items: Items | None = None,
) -> Columns:
    """`pair_set` column-wise: the counts, refusals and conversions in target order, and the pairs."""
    status_of, value_of, refused_of, converts_of = answers.arrays()
    answer = verdicts.answer
    status, value, judge_refused = status_of[answer], value_of[answer], refused_of[answer]
    gold_row = gold.rows(verdicts, excluded or set())
    gold_code = gold.code[gold_row]
    has_gold = gold_code != NO_LABEL
    counts = PairCounts(
        targets=verdicts.size,
        unresolved=int(np.count_nonzero(status == 1)),
        failed=int(np.count_nonzero(status == 2)),
        without_gold=int(np.count_nonzero(~has_gold)),
    )
    gold_refused = gold_code == REFUSED
    answer_refused = has_gold & ~gold_refused & judge_refused
    events = [(i, gold.of_row(gold_row[i]).refused) for i in np.flatnonzero(gold_refused).tolist()]
    events += [(i, answers.refused[answer[i]]) for i in np.flatnonzero(answer_refused).tolist()]
    counts.refused = _in_first_order(events)
    paired = has_gold & ~gold_refused & ~answer_refused
    conversions = []
    for i in np.flatnonzero(paired & (gold.converts[gold_row] | converts_of[answer])).tolist():
        said = gold.of_row(gold_row[i]).conversion
        if said:
            conversions.append((2 * i, f"gold {said}"))
        said = answers.conversion[answer[i]]
        if said:
            conversions.append((2 * i + 1, f"judge {said}"))
    counts.conversions = _in_first_order(conversions)
    return Columns(
        judge=judge,
        labels=answers.labels,
        verdicts=verdicts,
        status=status,
        value=value,
        judge_refused=judge_refused,
        gold_row=gold_row,
        gold_code=gold_code,
        item_row=items.rows(verdicts) if items is not None else np.zeros(0, dtype=np.intp),
        counts=counts,
        resolved_pairs=np.flatnonzero(paired & (status == 0)),
        unresolved_pairs=np.flatnonzero(paired & (status != 0)),
    )


def _present(codes: np.ndarray, size: int) -> list[int]:
    """The label codes that occur (codes are small: counted, not sorted)."""
    return np.flatnonzero(np.bincount(codes, minlength=size)).tolist() if len(codes) else []


def _label_positions(c: Columns, gold: np.ndarray, judged: np.ndarray) -> tuple[list[str], np.ndarray]:
    """`slice_labels` of these gold and judge label codes, and where each label code falls in it."""
    names = c.labels.names
    size = len(names)
    labels = slice_labels(c.judge, [names[i] for i in _present(gold, size)], [names[i] for i in _present(judged, size)])
    index = {label: i for i, label in enumerate(labels)}
    return labels, np.array([index.get(name, -1) for name in names], dtype=np.intp)


def _report(
    c: Columns, items: Items | None, pairs: np.ndarray, *, n_boot: int, weighted: bool = False
) -> classification.ClassificationReport:
    """`quality_pairs.pairs_report` of the pairs at these target positions (in this order)."""
    resolved = c.status[pairs] == 0
    judged = np.where(resolved, c.value[pairs], c.labels(UNRESOLVED_LABEL))
    gold = c.gold_code[pairs]
    labels, _ = _label_positions(c, gold, judged[resolved])
    if not resolved.all():
        labels = [*labels, UNRESOLVED_LABEL]
    index = {label: i for i, label in enumerate(labels)}
    position = np.array([index.get(name, -1) for name in c.labels.names], dtype=np.intp)
    return classification.coded_classification_report(
        position[gold],
        position[judged],
        labels=labels,
        weights=items.weight[c.item_row[pairs]] if weighted and items is not None else None,
        clusters=c.verdicts.conversation[pairs],
        n_boot=n_boot,
    )


def _gold_sources(c: Columns, gold: GoldColumns, pairs: np.ndarray) -> dict[str, int]:
    """dict(Counter(each pair's gold source)): its keys in the order the pairs first give them."""
    names = list(dict.fromkeys(g.source for g in gold.kinds))
    source_of_kind = np.array([names.index(g.source) for g in gold.kinds] + [0], dtype=np.intp)
    source = source_of_kind[gold.kind[c.gold_row[pairs]]]
    if not len(source):
        return {}
    counts = np.bincount(source, minlength=len(names))
    first = np.full(len(names), len(source))
    present = np.flatnonzero(counts)
    first[present] = [int(np.argmax(source == code)) for code in present.tolist()]
    return {names[code]: int(counts[code]) for code in sorted(present.tolist(), key=first.__getitem__)}


def _qa_estimate(c: Columns, items: Items, convention: str) -> QaEstimate:
    """`quality_estimates.qa_estimate` over the version's QA-sampled targets."""
    resolved = c.status == 0
    sampled = items.qa[c.item_row] & (c.gold_code != REFUSED) & ~c.judge_refused
    if convention == "excluded":
        sampled &= resolved
    chosen = np.flatnonzero(sampled)
    return QaEstimate(
        estimates.proportion_estimate_columns(
            c.verdicts.language_of(chosen),
            items.probability[c.item_row[chosen]],
            resolved[chosen] & (c.value[chosen] == c.gold_code[chosen]),
            c.gold_code[chosen] != NO_LABEL,
            estimator="hajek",
        )
    )


def _pass_rates(c: Columns, items: Items, version: JudgeVersion) -> tuple[list[PassRate], str]:
    """`quality_estimates.pass_rates` column-wise."""
    rule = outcomes.pass_fail_rule(c.judge, version)
    if rule is None:
        return [], "This judge has no pass/fail view (an ordinal version without a declared pass threshold)."
    # Only the labels verdicts and gold give: the label set may also hold "unresolved", which no rule passes.
    passes = np.full(len(c.labels.names) + 1, -1, dtype=np.int8)
    for code in np.unique(np.concatenate((c.value, c.gold_code))).tolist():
        if code >= 0:
            said = _passes(rule, c.labels.names[code])
            passes[code] = -1 if said is None else int(said)
    judged = passes[np.where((c.status == 0) & (c.value >= 0), c.value, -1)]
    truth = passes[np.where(c.gold_code >= 0, c.gold_code, -1)]
    human = items.qa[c.item_row] & (truth >= 0)
    counted = np.flatnonzero(judged >= 0)
    language = c.verdicts.language[counted]
    rows = []
    for name, code in sorted((c.verdicts.languages[code], code) for code in np.unique(language).tolist()):
        at = counted[language == code]
        labelled, unlabelled = at[human[at]], at[~human[at]]
        raw = agreement.proportion_interval(int(np.count_nonzero(judged[at] == 1)), len(at))
        if len(labelled) < 2 or not len(unlabelled):
            rows.append(PassRate(name, len(at), len(labelled), raw, None, None, None, "", "too few QA labels for PPI"))
            continue
        result = estimates.prediction_powered_rate(truth[labelled] == 1, judged[labelled] == 1, judged[unlabelled] == 1)
        rows.append(
            PassRate(name, len(at), len(labelled), raw, result.human, result.ppi, result.width_ratio, result.method)
        )
    return rows, ""


def _runs(c: Columns, answers: Answers, sweep_id: int | None) -> Runs:
    """`quality_estimates.run_spreads` column-wise, over the version's every verdict."""
    v = c.verdicts
    assert v.run_target is not None and v.run_sweep is not None and v.run_index is not None
    assert v.run_answer is not None
    sweep = sweep_id
    if sweep is None and len(v.run_sweep):
        # The latest sweep with the most runs (a run index is a small int: one number per sweep and run).
        if v.run_sweep.max() < 2**47:
            pairs = np.unique(v.run_sweep.astype(np.int64) * 2**16 + v.run_index)
            sweeps, runs = np.unique(pairs >> 16, return_counts=True)
            counted = zip(runs.tolist(), sweeps.tolist(), strict=True)
        else:
            seen = set(zip(v.run_sweep.tolist(), v.run_index.tolist(), strict=True))
            counted = ((sum(1 for s, _ in seen if s == one), one) for one in {s for s, _ in seen})
        sweep = int(max(counted)[1])
    status_of, value_of, refused_of, _ = answers.arrays()
    # The sweep's verdicts on targets whose gold gives an outcome, but for answers that give none. A target
    # has at most one verdict per run of a sweep (the verdict table's unique constraints).
    truth = c.gold_code[v.run_target]
    kept = (v.run_sweep == sweep) & (truth >= 0) & ~refused_of[v.run_answer]
    target, run, answer, truth = v.run_target[kept], v.run_index[kept], v.run_answer[kept], truth[kept]
    empty = agreement.mean_std([])
    if not len(target):
        return Runs(sweep, [], 0, empty, empty, empty)
    indexes = np.unique(run)
    covered = np.bincount(target, minlength=v.size)
    common = covered == len(indexes)
    rows, f1s = [], []
    for run_index in indexes.tolist():
        at = (run == run_index) & common[target]
        status, value, gold = status_of[answer[at]], value_of[answer[at]], truth[at]
        resolved = status == 0
        rows.append(
            RunRow(
                run_index=run_index,
                n=int(np.count_nonzero(common)),
                resolved=int(np.count_nonzero(resolved)),
                unresolved=int(np.count_nonzero(status == 1)),
                failed=int(np.count_nonzero(status == 2)),
                right=int(np.count_nonzero(resolved & (value == gold))),
            )
        )
        if not resolved.any():
            f1s.append(None)
            continue
        labels, position = _label_positions(c, gold[resolved], value[resolved])
        report = classification.coded_classification_report(
            position[gold[resolved]], position[value[resolved]], labels=labels, n_boot=0
        )
        f1s.append(report.macro_f1.value)
    return Runs(
        sweep_id=sweep,
        rows=rows,
        dropped=int(np.count_nonzero(covered > 0)) - int(np.count_nonzero(common)),
        excluded=agreement.runs_accuracy([r.counts for r in rows], unresolved="excluded"),
        wrong=agreement.runs_accuracy([r.counts for r in rows], unresolved="wrong"),
        macro_f1=agreement.mean_std(f1s),
    )


def _sub_scores(c: Columns, gold: GoldColumns) -> dict[str, scoring_outcomes.SubScoreDifference]:
    """A weighted judge's sub-scores against gold's, where both give them (`version_quality`'s)."""
    given = c.verdicts.sub_scores
    if given is None:  # no verdict on the slice (sub-scores are read with every verdict of a weighted judge)
        assert not c.verdicts.size
        return {}
    pairs = []
    for i, row in enumerate(c.gold_row.tolist()):
        if row < gold.size and c.status[i] == 0 and given[i]:
            truth = gold.of_row(row).sub_scores
            if truth:
                pairs.append((truth, given[i]))
    return scoring_outcomes.sub_score_differences(pairs) if pairs else {}


def version_figures(
    *,
    version: JudgeVersion,
    c: Columns,
    answers: Answers,
    gold: GoldColumns,
    items: Items | None,
    n_boot: int,
    slice: Slice,
    detail: bool = True,
) -> VersionQuality:
    """`quality.version_quality` from columns. Without `detail`, only what the overview and the trend
    show: the counts and the overall report (not the accuracy under both conventions either)."""
    from reviewapp.quality.selectors.quality import VersionQuality  # quality imports this module

    chosen = c.under(slice.unresolved)
    quality = VersionQuality(
        version=version,
        slice=slice,
        scored=c.counts,
        overall=_report(c, items, chosen, n_boot=n_boot),
        gold_sources=_gold_sources(c, gold, chosen),
    )
    if not detail:
        return quality
    assert items is not None
    for convention in CONVENTIONS:
        pairs = c.under(convention)
        # The chosen convention's accuracy is the overall report's: its interval is not the bootstrap's.
        same = convention == slice.unresolved
        quality.accuracy[convention] = (
            len(pairs),
            quality.overall.accuracy if same else _report(c, items, pairs, n_boot=0).accuracy,
        )
    language = c.verdicts.language[chosen]
    quality.by_language = {
        name: _report(c, items, chosen[language == code], n_boot=n_boot)
        for name, code in sorted((c.verdicts.languages[code], code) for code in np.unique(language).tolist())
    }
    qa = c.resolved_pairs[items.qa[c.item_row[c.resolved_pairs]]]
    quality.qa_weighted = _report(c, items, qa, n_boot=n_boot, weighted=True)
    quality.qa_unweighted = _report(c, items, qa, n_boot=n_boot)
    quality.qa = _qa_estimate(c, items, slice.unresolved)
    quality.pass_rates, quality.pass_rates_note = _pass_rates(c, items, version)
    if c.judge.scale == Judge.Scale.WEIGHTED:
        quality.sub_scores = _sub_scores(c, gold)
    quality.disputed = _report(c, items, chosen[items.disputed[c.item_row[chosen]]], n_boot=n_boot)
    quality.runs = _runs(c, answers, slice.sweep_id)
    return quality
