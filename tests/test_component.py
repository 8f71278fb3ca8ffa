"""The component contract (issue 21): services declared and checked at build, never a crash mid-run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin import cli
from twin.model.component import (
    FABRIC,
    BuildContext,
    Component,
    ContractError,
    Metrics,
    ResultsSoFar,
    Service,
    Tables,
)
from twin.model.it_power import IT_POWER, ITPower
from twin.scenario import load_dict, load_scenario
from twin.sim import COMPONENTS, Model, build_order

ROOT = Path(__file__).resolve().parent.parent

TINY: dict[str, Any] = {
    "name": "tiny", "seed": 1, "horizon_days": 5,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 50_000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
}

BUILT: list[str] = []
"""Names of the probe components built, in order (reset by each test)."""

PLAN = Service[object]("plan", "a service nobody in the registry provides (test only)")


class _Probe(Component):
    """A test component: always wanted, records that it was built."""

    name = "probe"

    @classmethod
    def wanted(cls, sc: Any) -> bool:
        return True

    @classmethod
    def build(cls, ctx: BuildContext) -> Component:
        BUILT.append(cls.name)
        return cls()


class NeedsPlan(_Probe):
    name = "needs_plan"
    requires = (PLAN,)


class FabricA(_Probe):
    name = "fabric_a"
    provides = (FABRIC,)


class FabricB(_Probe):
    name = "fabric_b"
    provides = (FABRIC,)


class NeedsFabric(_Probe):
    name = "needs_fabric"
    requires = (FABRIC,)


@pytest.fixture(autouse=True)
def _reset() -> None:
    BUILT.clear()


def tiny() -> Any:
    return load_dict(copy.deepcopy(TINY)).scenario


def test_required_service_without_provider_is_a_contract_error_before_any_build() -> None:
    with pytest.raises(ContractError, match="'needs_plan' requires service 'plan', which no component provides"):
        Model(tiny(), 0, components=(FabricA, NeedsPlan))
    assert BUILT == []  # checked before anything was built, let alone run


def test_two_providers_of_one_service_is_a_contract_error_before_any_build() -> None:
    with pytest.raises(ContractError, match=r"service 'fabric' has 2 providers \('fabric_a', 'fabric_b'\)"):
        Model(tiny(), 0, components=(FabricA, FabricB, NeedsFabric))
    assert BUILT == []


def test_providers_are_built_before_their_consumers() -> None:
    Model(tiny(), 0, components=(NeedsFabric, FabricA))
    assert BUILT == ["fabric_a", "needs_fabric"]


def test_a_cycle_of_requirements_is_a_contract_error() -> None:
    class A(_Probe):
        name = "a"
        provides = (PLAN,)
        requires = (FABRIC,)

    class B(_Probe):
        name = "b"
        provides = (FABRIC,)
        requires = (PLAN,)

    with pytest.raises(ContractError, match="cycle: 'a' -> 'b' -> 'a'"):
        build_order((A, B), tiny())


def test_a_service_taken_without_declaring_it_is_a_contract_error() -> None:
    class Sneaky(_Probe):
        name = "sneaky"

        @classmethod
        def build(cls, ctx: BuildContext) -> Component:
            ctx.service(FABRIC)
            return cls()

    with pytest.raises(ContractError, match="'sneaky' asked for service 'fabric' without declaring it"):
        Model(tiny(), 0, components=(FabricA, Sneaky))


def test_a_metric_reported_twice_is_a_contract_error() -> None:
    class Reporter(_Probe):
        name = "reporter"

        def results(self, so_far: ResultsSoFar) -> tuple[Metrics, Tables]:
            return {"failures": 0.0}, {}  # the core's metric

    m = Model(tiny(), 0, components=(Reporter,))
    m.run()
    with pytest.raises(ContractError, match="'reporter' reports failures, already reported"):
        m.result()


def test_bundled_power_scenario_without_the_it_power_provider_fails_at_build() -> None:
    sc = load_scenario(ROOT / "scenarios" / "power-n.yaml", ["horizon_days=1"]).scenario
    without = tuple(c for c in COMPONENTS if c is not ITPower)
    with pytest.raises(ContractError, match="'power' requires service 'it_power'"):
        Model(sc, 0, components=without)


@pytest.mark.parametrize("name", ["power-n", "air", "baseline"])
def test_one_it_power_shared_and_no_singleton_on_the_engine(name: str) -> None:
    """power, cooling and costs get the one provided ITPower; nothing is hung on the engine."""
    sc = load_scenario(ROOT / "scenarios" / f"{name}.yaml", ["horizon_days=1"]).scenario
    m = Model(sc, 0)
    it = m.services[IT_POWER]
    assert isinstance(it, ITPower)
    users = [c for c in ("power", "cooling", "costs") if c in m.by_section]
    assert users
    for c in users:
        assert m.by_section[c].it is it
    assert [c.name for c in m.components].count("it_power") == 1
    assert not hasattr(m.engine, "it_power") and not hasattr(m.engine, "fabric")


def test_workload_takes_the_fabric_service() -> None:
    sc = load_scenario(ROOT / "scenarios" / "fabric-stress.yaml", ["horizon_days=1"]).scenario
    m = Model(sc, 0)
    assert m.by_section["workload"].fabric is m.by_section["network"] is m.services[FABRIC]


def test_contract_error_is_an_internal_error_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import twin.sim

    monkeypatch.setattr(twin.sim, "COMPONENTS", (NeedsPlan,))
    monkeypatch.setenv("TWIN_LOG_DIR", str(tmp_path / "logs"))
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY, sort_keys=False))
    code = cli.main(["run", str(path), "--results", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert code == 3
    assert len(err) == 1 and "internal error" in err[0] and "ContractError" in err[0], err
    assert BUILT == []
