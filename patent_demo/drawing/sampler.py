"""Batch sampler for HMCL training: P patents x K figures, grouped by the Locarno hierarchy.

HMCL (Eqs. 2-4) only sees hierarchical positives when a batch holds several patents of one
subclass and of one main class; uniform sampling over thousands of patents rarely gives that.
Each batch is therefore drawn as:

1. an anchor subclass, chosen with probability proportional to its number of patents among
   subclasses with at least two patents (so patents are drawn about uniformly);
2. ``subclass_fraction * P`` patents (rounded half up) of that subclass (without replacement);
3. ``main_fraction * P`` further patents of the same main class (any subclass);
4. random patents from the whole pool to fill ``P``.

A group smaller than its share passes the remainder to the next step, and a patent occurs at most
once per batch. For each patent, ``K`` figures are drawn without replacement; a patent with fewer
than ``K`` figures contributes all of them, then repeats drawn with replacement (training applies
independent augmentations, so repeats are distinct views).

The sampler works on plain lists so it does not depend on the corpus class. It yields lists of
figure indices (``len == P * K``, patent-major: the ``K`` figures of a patent are consecutive) and is
meant as a ``DataLoader(batch_sampler=...)``.

Epochs are a number of batches. The global sequence of an epoch is a pure function of
``(seed, epoch)`` (``set_epoch``); under DDP, rank ``r`` of ``W`` takes batches ``r, r + W, ...`` of it,
so ranks get disjoint batches and the same number of them.

:class:`StepBatches` turns the sampler into the batches of training steps, each figure with an augmentation
seed (:func:`step_seed`), so a run reproduces and resumes exactly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler

__all__ = ["HierarchicalBatchSampler"]


class HierarchicalBatchSampler(Sampler[list[int]]):
    """P patents x K figures per batch, with same-subclass and same-main-class groups.

    Args:
        patent_ids: one id per patent (hashable, unique).
        subclasses: Locarno subclass per patent (``"06-01"``); ``None`` or ``""`` for unknown.
        mains: Locarno main class per patent (``"06"``); ``None`` or ``""`` for unknown.
        figures: per patent, the dataset indices of its figures (each index in one patent only).
        patents_per_batch: ``P``.
        figures_per_patent: ``K`` (2 gives HMCL's pairs).
        subclass_fraction: share of ``P`` drawn from the anchor subclass.
        main_fraction: share of ``P`` drawn from the anchor's main class outside that group.
        num_batches: global batches per epoch (all ranks together); default ``ceil(#patents / P)``.
            Each rank yields ``ceil(num_batches / world_size)`` batches.
        seed: base seed; the epoch's sequence depends on ``(seed, epoch)`` only.
        rank, world_size: DDP position; defaults are a single process.
    """

    def __init__(
        self,
        patent_ids: Sequence[Hashable],
        subclasses: Sequence[Hashable | None],
        mains: Sequence[Hashable | None],
        figures: Sequence[Sequence[int]],
        patents_per_batch: int,
        figures_per_patent: int = 2,
        subclass_fraction: float = 0.5,
        main_fraction: float = 0.25,
        num_batches: int | None = None,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        n = len(patent_ids)
        if not (len(subclasses) == len(mains) == len(figures) == n):
            raise ValueError(
                f"patent_ids, subclasses, mains and figures must have one entry per patent; got lengths "
                f"{n}, {len(subclasses)}, {len(mains)}, {len(figures)}"
            )
        if len(set(patent_ids)) != n:
            raise ValueError("patent_ids must be unique")
        if patents_per_batch < 1 or figures_per_patent < 1:
            raise ValueError(
                f"patents_per_batch and figures_per_patent must be >= 1, got {patents_per_batch}, {figures_per_patent}"
            )
        if patents_per_batch > n:
            raise ValueError(f"patents_per_batch={patents_per_batch} exceeds the number of patents ({n})")
        if not (0 <= subclass_fraction and 0 <= main_fraction and subclass_fraction + main_fraction <= 1):
            raise ValueError(
                f"fractions must be >= 0 and sum to at most 1, got subclass_fraction={subclass_fraction}, "
                f"main_fraction={main_fraction}"
            )
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
        owner: dict[int, int] = {}
        for p, figs in enumerate(figures):
            if len(figs) == 0:
                raise ValueError(f"patent {patent_ids[p]!r} has no figures; leave it out of the sampler")
            for f in figs:
                if f in owner and owner[f] != p:
                    raise ValueError(
                        f"figure index {f} belongs to patents {patent_ids[owner[f]]!r} and {patent_ids[p]!r}"
                    )
                owner[f] = p
        self.patent_ids = list(patent_ids)
        self.figures = [np.asarray(list(figs), dtype=np.int64) for figs in figures]
        self.figure_to_patent: dict[int, Hashable] = {f: self.patent_ids[p] for f, p in owner.items()}
        self.P = patents_per_batch
        self.K = figures_per_patent
        # round half up (not Python's round-half-even), the main-class share counted on top of the subclass's
        self.n_subclass = math.floor(subclass_fraction * patents_per_batch + 0.5)
        self.n_main = min(
            math.floor(main_fraction * patents_per_batch + 0.5), patents_per_batch - self.n_subclass
        )
        self.num_batches = num_batches if num_batches is not None else math.ceil(n / patents_per_batch)
        if self.num_batches < 1:
            raise ValueError(f"num_batches must be >= 1, got {self.num_batches}")
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0

        # Groups keyed by (main, subclass) so a subclass code can never straddle two main classes.
        by_sub: dict[tuple, list[int]] = defaultdict(list)
        by_main: dict[Hashable, list[int]] = defaultdict(list)
        for p in range(n):
            main, sub = mains[p], subclasses[p]
            if main not in (None, ""):
                by_main[main].append(p)
            if sub not in (None, ""):
                by_sub[(main, sub)].append(p)
        self._sub_groups = [np.asarray(v, dtype=np.int64) for v in by_sub.values()]
        self._sub_main = [key[0] for key in by_sub]
        self._main_groups = {k: np.asarray(v, dtype=np.int64) for k, v in by_main.items()}
        sizes = np.asarray([len(g) for g in self._sub_groups], dtype=np.float64)
        eligible = sizes >= 2
        if not eligible.any():
            eligible = sizes >= 1
        weights = np.where(eligible, sizes, 0.0)
        self._sub_probs = weights / weights.sum() if weights.sum() > 0 else None

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose batch sequence ``__iter__`` yields (call before each epoch)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(self.num_batches / self.world_size)

    def _draw_patents(self, rng: np.random.Generator) -> np.ndarray:
        """One batch's ``P`` distinct patent positions, group members first."""
        chosen: list[int] = []
        taken = np.zeros(len(self.patent_ids), dtype=bool)

        def take(pool: np.ndarray, count: int) -> None:
            free = pool[~taken[pool]]
            if count <= 0 or free.size == 0:
                return
            picked = rng.choice(free, size=min(count, free.size), replace=False)
            taken[picked] = True
            chosen.extend(int(p) for p in picked)

        if self._sub_probs is not None and self.n_subclass + self.n_main > 0:
            g = int(rng.choice(len(self._sub_groups), p=self._sub_probs))
            take(self._sub_groups[g], self.n_subclass)
            main = self._sub_main[g]
            if main in self._main_groups:
                take(self._main_groups[main], self.n_subclass + self.n_main - len(chosen))
        take(np.arange(len(self.patent_ids)), self.P - len(chosen))
        return np.asarray(chosen, dtype=np.int64)

    def _draw_figures(self, rng: np.random.Generator, patent: int) -> list[int]:
        figs = self.figures[patent]
        if figs.size >= self.K:
            return [int(f) for f in rng.choice(figs, size=self.K, replace=False)]
        extra = rng.choice(figs, size=self.K - figs.size, replace=True)
        return [int(f) for f in np.concatenate([rng.permutation(figs), extra])]

    def global_batches(self, epoch: int | None = None) -> list[list[int]]:
        """All ranks' batches of an epoch, in order: ``len(self) * world_size`` lists of figure indices."""
        rng = np.random.default_rng([self.seed, self.epoch if epoch is None else epoch])
        out = []
        for _ in range(len(self) * self.world_size):
            patents = self._draw_patents(rng)
            out.append([f for p in patents for f in self._draw_figures(rng, int(p))])
        return out

    def __iter__(self) -> Iterator[list[int]]:
        yield from self.global_batches()[self.rank :: self.world_size]


def step_seed(*parts: int) -> int:
    """One augmentation seed from ``(seed, step, rank, j)``: runs reproduce and resume exactly."""
    return int(np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1, dtype=np.uint64)[0])


class StepBatches:
    """Batches of steps ``start .. total - 1`` from ``sampler``: lists of ``(figure index, seed)``.

    Step ``s`` is batch ``s mod len(sampler)`` of epoch ``s // len(sampler)``, so resuming at any step
    yields exactly the batches the uninterrupted run would have seen."""

    def __init__(
        self, sampler: HierarchicalBatchSampler, total: int, start: int, seed: int, rank: int
    ) -> None:
        self.sampler, self.total, self.start, self.seed, self.rank = sampler, total, start, seed, rank

    def __len__(self) -> int:
        return max(0, self.total - self.start)

    def __iter__(self):
        n = len(self.sampler)
        step = self.start
        while step < self.total:
            epoch, offset = divmod(step, n)
            self.sampler.set_epoch(epoch)
            for batch in list(self.sampler)[offset:]:
                if step >= self.total:
                    return
                yield [(f, step_seed(self.seed, step, self.rank, j)) for j, f in enumerate(batch)]
                step += 1
