"""Reserved capacity: the account's reservations and the Capacity Blocks on offer (`GET /reservations`,
purchases, reservation_idle waste), and a reserved candidate's wait for its reservation.

May import: the domain; of the use cases: no other use case.
"""
