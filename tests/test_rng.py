"""Counter-based random streams (model.md §1): Philox known answers, array/scalar identity,
uniformity, and determinism of whole replications under common random numbers."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import yaml
from scipy import stats

from twin import rng
from twin.scenario.distributions import Exponential, Lognormal, Weibull
from twin.scenario.loader import load_dict
from twin.sim import Model, run_replication

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scenarios" / "baseline.yaml"


# ---- Philox4x32-10 known-answer vectors (Random123, kat_vectors) ---------------------------

KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_philox_known_answers(ctr, key, expected) -> None:
    out = rng.philox4x32_10(np.array(ctr, dtype=np.uint64).reshape(4, 1), key)
    assert out.shape == (4, 1)
    assert tuple(int(w) for w in out[:, 0]) == expected


def test_philox_known_answers_vectorised() -> None:
    """All three vectors in one array call (same key per call, so group by key): each column
    of a batched call equals its single-column call."""
    for ctr, key, expected in KAT:
        batch = np.array([ctr] * 5, dtype=np.uint64).T  # (4, 5)
        out = rng.philox4x32_10(batch, key)
        for j in range(5):
            assert tuple(int(w) for w in out[:, j]) == expected
    # words stay 32-bit
    out = rng.philox4x32_10(np.arange(4 * 1000, dtype=np.uint64).reshape(4, 1000), (0xFFFFFFFF, 0x12345678))
    assert out.dtype == np.uint64 and int(out.max()) < 2**32


# ---- one at a time == one array --------------------------------------------------------------

DISTS = [
    Exponential(mean_h=50_000.0),
    Weibull(shape=1.7, scale_h=80_000.0),
    Lognormal(mean_h=4.0, sigma=0.8),
]


def _paths(n: int) -> list[str]:
    return [f"hall.rack{i // 64:02d}.node{i // 8:03d}.gpu{i % 8}#fail" for i in range(n)]


def test_scalar_and_array_draws_bit_identical() -> None:
    key = rng.replication_key(20261130, 3)
    n, draws = 10_000, 3
    digests = rng.path_digests(_paths(n))
    assert len(np.unique(digests)) == n
    k = np.arange(draws)
    u_arr = rng.uniforms(key, digests[:, None], k[None, :])
    assert u_arr.shape == (n, draws)
    u_one = np.empty((n, draws))
    for i in range(n):
        d = digests[i : i + 1]
        for j in range(draws):
            u_one[i, j] = rng.uniforms(key, d, j)[0]
    # bit-identical uniforms
    assert np.array_equal(u_arr.view(np.uint64), u_one.view(np.uint64))
    # ... and bit-identical lifetimes, drawn as one array and one at a time
    for dist in DISTS:
        life_arr = dist.sample(u_arr)
        life_one = np.array([[dist.sample(np.array([u_one[i, j]]))[0] for j in range(draws)] for i in range(n)])
        assert np.array_equal(life_arr.view(np.uint64), life_one.view(np.uint64)), dist
        assert np.all(np.isfinite(life_arr)) and np.all(life_arr > 0)


def test_order_of_asking_does_not_matter() -> None:
    """The k-th draw is a function of (key, path, k) alone: asking in reverse or shuffled order,
    or mixed with other paths, gives the same numbers."""
    key = rng.replication_key(7, 0)
    digests = rng.path_digests(_paths(500))
    k = np.arange(500) % 7
    a = rng.uniforms(key, digests, k)
    perm = np.random.default_rng(1).permutation(500)
    b = rng.uniforms(key, digests[perm], k[perm])
    assert np.array_equal(a[perm], b)


def test_streams_differ_by_key_path_and_k() -> None:
    d = rng.path_digests(["a.b.c#fail", "a.b.c#repair"])
    k0 = rng.replication_key(1, 0)
    k1 = rng.replication_key(1, 1)
    k2 = rng.replication_key(2, 0)
    assert len({k0, k1, k2}) == 3
    base = rng.uniforms(k0, d, 0)
    assert base[0] != base[1]  # purpose suffix changes the stream
    assert not np.array_equal(base, rng.uniforms(k1, d, 0))
    assert not np.array_equal(base, rng.uniforms(k2, d, 0))
    assert not np.array_equal(base, rng.uniforms(k0, d, 1))
    # the digest is stable (BLAKE2b, not the per-process hash())
    assert rng.path_digest("hall.rack00.node000.gpu0") == int.from_bytes(
        __import__("hashlib").blake2b(b"hall.rack00.node000.gpu0", digest_size=8).digest(), "little")


# ---- uniformity ------------------------------------------------------------------------------

def test_uniforms_open_interval_and_ks() -> None:
    key = (0x9E3779B9, 0x7F4A7C15)
    digests = rng.path_digests(f"ks.part{i}" for i in range(2000))
    u = rng.uniforms(key, digests[:, None], np.arange(50)[None, :]).ravel()  # 100,000 draws
    assert u.dtype == np.float64
    assert np.all(u > 0.0) and np.all(u < 1.0)
    res = stats.kstest(u, "uniform")
    assert res.pvalue > 1e-4, res  # fixed key: deterministic, not flaky; 1e-4: the suite's budget
    # the mean of 10^5 uniforms: 99.99 % normal bound (sd = 1/sqrt(12 n))
    assert abs(u.mean() - 0.5) < 3.9 / np.sqrt(12 * u.size)
    # along k within one stream as well
    one = rng.uniforms(key, digests[:1], np.arange(20_000))
    assert stats.kstest(one, "uniform").pvalue > 1e-4


@pytest.mark.parametrize("word", [0x00000000, 0xFFFFFFFF])
def test_uniform_mapping_never_reaches_0_or_1(monkeypatch, word) -> None:
    """The bits-to-float mapping at its extremes (all-zero and all-one output words) still
    lies strictly inside (0, 1): u = 1 would give an infinite exponential lifetime."""

    def fake(counter, key):
        return np.full((4, np.asarray(counter).shape[1]), word, dtype=np.uint64)

    monkeypatch.setattr(rng, "philox4x32_10", fake)
    u = rng.uniforms((0, 0), np.array([1], dtype=np.uint64), 0)
    assert 0.0 < u[0] < 1.0
    assert np.isfinite(Exponential(mean_h=1.0).sample(u)).all()


# ---- the engine follows the contract ---------------------------------------------------------

def _baseline_doc() -> dict:
    return yaml.safe_load(BASELINE.read_text())


def test_population_lifetimes_follow_the_contract() -> None:
    """A population's first lifetimes are the inverse CDF of u(key(seed, rep), digest(path), k=0,
    stream 'fail')."""
    doc = _baseline_doc()
    sc = load_dict(doc).scenario
    model = Model(sc, replication=2)
    key = rng.replication_key(sc.seed, 2)
    for name, pop in model.parts.items():
        paths = [pop.path(i) for i in range(pop.n)]
        u = rng.uniforms(key, rng.path_digests(paths), 0, rng.STREAMS["fail"])
        expected = sc.cluster.node.parts[name].failure.sample(u)
        assert np.array_equal(pop.life_h, expected), name


# ---- determinism of whole replications -------------------------------------------------------

TABLES = ("events", "tickets", "node_intervals", "parts", "capacity")


def _short_baseline(seed: int | None = None, days: float = 120.0) -> dict:
    doc = _baseline_doc()
    doc["horizon_days"] = days
    # more failures so the comparison is not trivially about empty tables
    for part in doc["cluster"]["node"]["parts"].values():
        f = part["failure"]
        if "mtbf_h" in f:
            f["mtbf_h"] /= 8
        elif "mean_h" in f:
            f["mean_h"] /= 8
        elif "scale_h" in f:
            f["scale_h"] /= 8
    if seed is not None:
        doc["seed"] = seed
    return doc


def test_same_seed_identical_tables() -> None:
    sc = load_dict(_short_baseline()).scenario
    a = run_replication(sc, 0)
    b = run_replication(load_dict(_short_baseline()).scenario, 0)
    assert len(a.tables["tickets"]) > 50
    assert set(TABLES) <= set(a.tables) and a.tables.keys() == b.tables.keys()
    for t in a.tables:  # every table, including those of optional sections (workload, network...)
        assert a.tables[t].equals(b.tables[t]), t
    assert a.metrics.keys() == b.metrics.keys()
    for k in a.metrics:
        va, vb = a.metrics[k], b.metrics[k]
        assert va == vb or (va != va and vb != vb), k


def test_different_seed_or_replication_differs() -> None:
    a = run_replication(load_dict(_short_baseline()).scenario, 0)
    b = run_replication(load_dict(_short_baseline(seed=12345)).scenario, 0)
    c = run_replication(load_dict(_short_baseline()).scenario, 1)
    for other in (b, c):
        for t in ("events", "tickets", "node_intervals"):
            assert not a.tables[t].equals(other.tables[t]), t


def test_adding_a_part_type_does_not_shift_existing_draws() -> None:
    base = _short_baseline()
    extra = copy.deepcopy(base)
    # a new part type in the node, inserted first so that it is built before every other part
    parts = extra["cluster"]["node"]["parts"]
    extra["cluster"]["node"]["parts"] = {
        "dimm": {"count": 32, "effect": "node_down", "failure": {"mtbf_h": 20_000},
                 "repair": {"time": {"dist": "fixed", "value_h": 1}}},
        **parts,
    }
    if extra.get("costs") is not None:  # a repaired part needs a price when the scenario has costs
        extra["costs"].setdefault("parts", {})["dimm"] = 50.0
    sa = load_dict(base).scenario
    sb = load_dict(extra).scenario
    ma, mb = Model(sa, 0), Model(sb, 0)
    assert set(mb.parts) == set(ma.parts) | {"dimm"}
    for name in ma.parts:
        assert np.array_equal(ma.parts[name].life_h, mb.parts[name].life_h), name
        assert np.array_equal(ma.parts[name].digest, mb.parts[name].digest), name

    ra, rb = run_replication(sa, 0), run_replication(sb, 0)
    ea, eb = ra.tables["events"], rb.tables["events"]
    fa = ea[ea["kind"] == "fail"]
    fb = eb[eb["kind"] == "fail"]
    assert (fb["path"].astype(str).str.contains(r"\.dimm\d+$")).sum() > 0
    # transient parts renew on failure, so their whole failure history is unchanged, bit for bit (the
    # baseline's one transient part since silent data corruption left its parts for health.sdc)
    for part in ("software",):
        sel_a = fa[fa["path"].astype(str).str.contains(rf"\.{part}\d+$")]
        sel_b = fb[fb["path"].astype(str).str.contains(rf"\.{part}\d+$")]
        assert len(sel_a) > 0
        assert np.array_equal(sel_a["time_h"].to_numpy(), sel_b["time_h"].to_numpy()), part
        assert list(sel_a["path"].astype(str)) == list(sel_b["path"].astype(str)), part
    # repaired parts fail at other times (repairs shift), but each path's k-th lifetime is the same
    for path, ga in fa.groupby(fa["path"].astype(str), observed=True):
        gb = fb[fb["path"].astype(str) == path]
        m = min(len(ga), len(gb))
        np.testing.assert_allclose(ga["value"].to_numpy()[:m], gb["value"].to_numpy()[:m], rtol=1e-9, atol=1e-6)


def test_streams_of_one_path_differ_and_k_is_bounded() -> None:
    key = rng.replication_key(1, 0)
    d = rng.path_digests(["hall.rack00.node000.gpu0"])
    a, b, c = (rng.uniforms(key, d, 0, s)[0] for s in (0, 1, 2))
    assert len({a, b, c}) == 3
    with pytest.raises(ValueError):
        rng.uniforms(key, d, 2**32)


def test_single_draws_equal_direct_draws() -> None:
    """PartPopulation.uniform draws one number in plain Python; every number equals the array
    function's draw of the same (path, stream, k)."""
    sc = load_dict(_baseline_doc()).scenario
    model = Model(sc, replication=0)
    pop = model.parts["gpu"]
    key = rng.replication_key(sc.seed, 0)
    for idx in (0, 5, 511, 512, 1000, pop.n - 1):
        for purpose in ("fail", "repair", "detect"):
            for k in (0, 3):
                direct = rng.uniforms(key, rng.path_digests([pop.path(idx)]), k, rng.STREAMS[purpose])[0]
                assert pop.uniform(idx, purpose, k) == direct


@settings(max_examples=300, deadline=None)
@given(k0=st.integers(0, 2**32 - 1), k1=st.integers(0, 2**32 - 1), digest=st.integers(0, 2**64 - 1),
       k=st.integers(0, 2**32 - 1), stream=st.integers(0, 7))
def test_plain_python_draw_is_bit_identical_to_the_array_function(k0, k1, digest, k, stream) -> None:
    """rng.uniform1 (the event loop's single draws) gives exactly the number of rng.uniforms' numpy
    rounds (more than SMALL_DRAWS draws, so uniforms does not itself use uniform1)."""
    many = np.full(rng.SMALL_DRAWS + 1, digest, dtype=np.uint64)
    want = rng.uniforms((k0, k1), many, k, stream)[0]
    assert rng.uniform1((k0, k1), digest, k, stream) == want


@settings(max_examples=100, deadline=None)
@given(key=st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
       digests=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40),
       k=st.integers(0, 2**32 - 1), stream=st.integers(0, 7))
def test_a_few_draws_are_those_of_many(key, digests, k, stream) -> None:
    """uniforms computes up to SMALL_DRAWS draws in plain Python: the same numbers, in the same shape,
    as each of them among more draws (numpy's rounds)."""
    d = np.array(digests, dtype=np.uint64)
    pad = np.concatenate([d, np.zeros(rng.SMALL_DRAWS + 1, dtype=np.uint64)])
    many = rng.uniforms(key, pad, k, stream)[:len(d)]
    few = rng.uniforms(key, d, k, stream)
    assert few.dtype == np.float64 and few.shape == d.shape
    np.testing.assert_array_equal(few, many)
    assert rng.uniforms(key, d[0], k, stream).shape == ()


def test_plain_python_draw_bounds_k() -> None:
    with pytest.raises(ValueError):
        rng.uniform1((0, 0), 1, 2**32)


def test_bulk_digests_equal_single_digests_and_part_paths() -> None:
    """path_digests (one read of the joined digests) gives path_digest of each path, and a part
    population's digests are those of its paths (built per node, not per part)."""
    paths = ["a", "hall.rack01.node001.gpu3", "x" * 300, "ünï", ""]
    assert rng.path_digests(paths).tolist() == [rng.path_digest(p) for p in paths]
    assert rng.path_digests([]).dtype == np.uint64
    model = Model(load_dict(_baseline_doc()).scenario, replication=0)
    for pop in model.parts.values():
        assert pop.digest.tolist() == [rng.path_digest(pop.path(i)) for i in range(pop.n)]


def _uniforms_for_single_draws() -> np.ndarray:
    """Uniforms of the event loop's single draws: Philox's own (through uniforms) and the extremes."""
    u = rng.uniforms(rng.replication_key(7, 0), np.arange(20_000, dtype=np.uint64), 3, stream=1)
    return np.concatenate([u, [1.1102230246251565e-16, 1e-300, 0.5, 1.0 - 2.0 ** -53, float(np.nextafter(1.0, 0.0))]])


def test_single_draws_in_numpy_scalars_are_the_arrays_bits() -> None:
    """``Distribution.sample1`` (numpy ufuncs on numpy scalars: the same inner loops, SIMD ones included) gives
    ``float(sample(np.array([u]))[0])`` bit for bit, and ``frail_sample1`` :func:`frail_sample`'s, for every
    distribution the event loop draws singly from (repair, detection, lifetimes, early lives)."""
    from twin.model.parts import frail_sample, frail_sample1
    from twin.scenario.distributions import Empirical, Fixed

    emp = Empirical(file="x.csv")
    emp.bind(np.array([0.5, 1.0, 2.0, 3.5, 7.0, 24.0]))
    dists = [Exponential(mean_h=4.0), Exponential(mean_h=111756.0), Weibull(shape=0.7, scale_h=5e4),
             Weibull(shape=1.5, scale_h=60000.0), Lognormal(mean_h=4.0, sigma=0.5), Lognormal(mean_h=0.3, sigma=1.7),
             Fixed(value_h=2.0), emp]
    us = _uniforms_for_single_draws()
    zs = rng.uniforms(rng.replication_key(7, 1), np.arange(len(us), dtype=np.uint64), 5) * 4.0
    for d in dists:
        want = d.sample(us)  # the array function: element by element what a one-element array gives
        one = [float(d.sample(np.array([u]))[0]) for u in us[:200]]
        assert one == want[:200].tolist()
        got = [d.sample1(float(u)) for u in us]
        assert got == want.tolist(), type(d).__name__
        wz = frail_sample(d, us, zs)
        gz = [frail_sample1(d, float(u), z) for u, z in zip(us, zs)]
        assert gz == wz.tolist(), type(d).__name__
