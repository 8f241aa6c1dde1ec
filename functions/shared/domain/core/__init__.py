"""The kernel every capability shares: the base of the domain's models, time, the vocabulary (one word per
thing), the domain's errors, money (a price and where it came from, exact dollar amounts), and the deployment's
settings.

May import: nothing else of the domain.
"""
