"""``livetable demo``: the whole product on one machine, driven by bots over the real API.

A virtual framed shoe on a pseudo-terminal, the real serial reader, the table service and
its HTTP/WebSocket API, a dealer bot that makes the mistakes the rules document has
procedures for, a supervisor bot that applies those procedures, and player bots betting
through the operator API. Nothing is short-circuited: every card goes over the serial
line and every action is an HTTP request, so the demo exercises what production runs.
"""
