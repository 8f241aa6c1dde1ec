"""The base of every domain model.

A pydantic model's validator is built when its class is created, unless building is deferred: then it is built
when the model is first used. Every handler imports most of the domain (the step models reach the selection,
the records and the pools) but uses a part of it, so each builds only the models it uses, not all of them, and
builds them on first use (bench/results/cold_start.json measures both: at import, and with every model built).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class DomainModel(BaseModel):
    model_config = ConfigDict(defer_build=True)


def every_model() -> set[type[DomainModel]]:
    """Every domain model class defined so far (in the modules imported), subclasses of subclasses included."""
    found: set[type[DomainModel]] = set()
    pending: list[type[DomainModel]] = [DomainModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return found
