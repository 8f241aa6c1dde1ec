"""Each team's budget ledger on DynamoDB: an item per team and month (TEAM#<team>, BUDGET#<YYYY-MM>) holding, for
the month and for each of its days, what the team's jobs spent, what they hold committed, and the sum of both
(`used`), which a commitment's condition compares against the budget (a condition expression cannot add).

A job's commitment is written with the job (its record's creation, a raise, the settlement) in one TransactWriteItems
of two conditional updates, so the ledger and the records always agree and no two writers overspend: the ledger's
`used` of each window must be at most the budget less the commitment at the moment of the write.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item
from functions.shared.adapters.job_lists import job_key
from functions.shared.domain.core.errors import BudgetFull, CommitmentChanged
from functions.shared.domain.teams.budget import bounds
from functions.shared.domain.teams.commitment import BudgetState, Commitment, usd

# What this module's calls are authorized against (the IAM drift check holds it to that): a transaction's updates
# are authorized as dynamodb:UpdateItem each ("Using IAM with DynamoDB transactions").
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")


def budget_key(team: str, month: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": f"TEAM#{team}"}, c.TABLE_SK: {"S": f"BUDGET#{month}"}}


def _number(value: float) -> dict[str, str]:
    return {"N": str(Decimal(str(usd(value))))}


def _names(day: str, *expressions: str) -> dict[str, str]:
    """The ledger's attributes of the month and of the commitment's day (its day of the month) that the expressions
    name (DynamoDB refuses a name no expression uses)."""
    dd = day[8:10]
    every = {
        "#um": "used_month", "#cm": "committed_month", "#sm": "spent_month",
        "#ud": f"used_{dd}", "#cd": f"committed_{dd}", "#sd": f"spent_{dd}",
    }  # fmt: skip
    return {name: attribute for name, attribute in every.items() if any(name in e for e in expressions)}


def commit_update(commitment: Commitment, adding: float) -> dict[str, Any]:
    """The ledger's conditional update committing `adding` more for a job of the commitment's team (BudgetFull when
    `adding` alone breaks a budget: nothing to write)."""
    limits = bounds(commitment, adding)
    if limits is None:
        raise BudgetFull(commitment.team)
    day_bound, month_bound = limits
    conditions, values = [], {":add": _number(adding)}
    if day_bound is not None:
        conditions.append("(attribute_not_exists(#ud) OR #ud <= :day)")
        values[":day"] = _number(day_bound)
    if month_bound is not None:
        conditions.append("(attribute_not_exists(#um) OR #um <= :month)")
        values[":month"] = _number(month_bound)
    expression = "ADD #um :add, #cm :add, #ud :add, #cd :add"
    update: dict[str, Any] = {
        "TableName": "",
        "Key": budget_key(commitment.team, commitment.month),
        "UpdateExpression": expression,
        "ExpressionAttributeNames": _names(commitment.day, expression),
        "ExpressionAttributeValues": values,
    }
    if conditions:
        update["ConditionExpression"] = " AND ".join(conditions)
    return update


def _cancelled(error: ClientError) -> list[str]:
    """Why each item of a cancelled transaction was not written; any other error is raised."""
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        raise error
    return [str(reason.get("Code")) for reason in error.response.get("CancellationReasons") or []]


class DynamoBudgets(ClientAdapter):
    """Implements ports.teams.Budgets."""

    service = "dynamodb"

    def __init__(self, table_name: str, dynamodb: Any | None = None) -> None:
        super().__init__(dynamodb)
        self._table = table_name

    def state(self, team: str, day: str, month: str) -> BudgetState:
        found = self._aws.get_item(TableName=self._table, Key=budget_key(team, month), ConsistentRead=True)
        item = deserialize_item(found.get("Item", {}))
        dd = day[8:10]
        return BudgetState(
            spent_day=float(item.get(f"spent_{dd}", 0)),
            committed_day=float(item.get(f"committed_{dd}", 0)),
            spent_month=float(item.get("spent_month", 0)),
            committed_month=float(item.get("committed_month", 0)),
        )

    def raise_commitment(self, job_id: str, commitment: Commitment, adding: float) -> bool:
        try:
            ledger = commit_update(commitment, adding) | {"TableName": self._table}
        except BudgetFull:
            return False
        record = {
            "TableName": self._table,
            "Key": job_key(job_id),
            "UpdateExpression": "SET commitment.#usd = :now",
            "ConditionExpression": "commitment.#usd = :was AND attribute_not_exists(commitment.settled_usd)",
            "ExpressionAttributeNames": {"#usd": "usd"},
            "ExpressionAttributeValues": {
                ":now": _number(commitment.usd + adding),
                ":was": _number(commitment.usd),
            },
        }
        try:
            self._aws.transact_write_items(TransactItems=[{"Update": record}, {"Update": ledger}])
        except ClientError as error:
            codes = _cancelled(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise CommitmentChanged(job_id) from error
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                return False
            raise
        return True

    def settle(self, job_id: str, commitment: Commitment, cost_usd: float) -> bool:
        first = commitment.settled_usd is None
        change = cost_usd - (commitment.usd if first else (commitment.settled_usd or 0.0))
        spent = cost_usd - (0.0 if first else (commitment.settled_usd or 0.0))
        values = {":used": _number(change), ":spent": _number(spent)}
        expression = "ADD #um :used, #ud :used, #sm :spent, #sd :spent"
        if first:
            expression += ", #cm :release, #cd :release"
            values[":release"] = _number(-commitment.usd)
        settled = "attribute_not_exists(commitment.settled_usd)" if first else "commitment.settled_usd = :was"
        record_values = {":cost": _number(cost_usd)} | ({} if first else {":was": _number(commitment.settled_usd or 0)})
        items = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": job_key(job_id),
                    "UpdateExpression": "SET commitment.settled_usd = :cost",
                    "ConditionExpression": f"attribute_exists(commitment) AND {settled}",
                    "ExpressionAttributeValues": record_values,
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": budget_key(commitment.team, commitment.month),
                    "UpdateExpression": expression,
                    "ExpressionAttributeNames": _names(commitment.day, expression),
                    "ExpressionAttributeValues": values,
                }
            },
        ]
        try:
            self._aws.transact_write_items(TransactItems=items)
        except ClientError as error:
            if "ConditionalCheckFailed" in _cancelled(error):
                return False
            raise
        return True
