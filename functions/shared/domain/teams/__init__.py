"""Teams: who a caller is (a principal, its team and its role, from the deployment's `teams`), what each role may do,
a team's budget (the worst case a job commits, what is left, the timeout that would fit), the audit line an action
leaves, what the API answers about teams, and the diagnosis of a job held by its team's GPU cap.

May import: core, requests, capacity, cost, diagnosis.
"""
