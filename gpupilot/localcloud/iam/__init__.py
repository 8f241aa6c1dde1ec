"""The deployed stack's IAM, enforced in the local cloud.

moto authorizes every call; AWS authorizes each against the caller's role. Here every AWS call a
function makes (through functions.shared.adapters.clients) is mapped to the IAM actions and resources
AWS would authorize it against (including what AWS checks without a call of its own: iam:PassRole for
the roles a call passes, batch:TagResource for tags given at creation), with the condition keys AWS
presents for it (iam:PassedToService, the tags an EC2 instance really carries), and checked against the
policy the synthesized template attaches to that function's role as AWS evaluates it: an explicit Deny
wins, an Allow applies only when its action, resource and every condition match. A call the template does
not allow fails with AccessDenied, as it would in AWS, naming the function, the action, the resource and
the call site; a policy the local cloud cannot evaluate as AWS would (an operator or key it does not know)
fails the deployment instead of being guessed. Every decision can be logged (GPUPILOT_AWS_CALL_LOG, a
directory), with the request it authorized and the policies it was decided against, for the IAM drift check of
the test suite.

It owns four modules, imported one way: conditions (the request AWS authorizes and IAM's condition operators) <
policies (a role's statements and the decision within them) < actions (what AWS authorizes each call against) <
enforcer (the hook that refuses a call and logs the decision).
"""

from gpupilot.localcloud.iam.actions import Arn, required
from gpupilot.localcloud.iam.conditions import Condition, PolicyError, Request, matches
from gpupilot.localcloud.iam.enforcer import CALL_LOG_ENV, IamEnforcer, enforcer_for, expecting_refusal
from gpupilot.localcloud.iam.policies import Statement, authorize, statements_of

__all__ = [
    "CALL_LOG_ENV",
    "Arn",
    "Condition",
    "IamEnforcer",
    "PolicyError",
    "Request",
    "Statement",
    "authorize",
    "enforcer_for",
    "expecting_refusal",
    "matches",
    "required",
    "statements_of",
]
