"""What the two HTTP servers share (`lantern mcp --http`, `lantern ui`): the guard on their
connections and the count of what they refuse.

* `connections`: uvicorn's h11 protocol with a deadline for each request to arrive and a cap
  on open connections, so that a client holding sockets open without sending a request (a
  slow-loris) cannot starve the others;
* `refusals`: refusals and closed connections counted by reason and logged one line per
  interval, never one each, and the process's file limit raised to the cap.

Said once here so that both servers close the same connections for the same reasons. Only
the two server packages import this one, when they serve; it needs uvicorn (and its h11),
which both their extras install.

Imports: the facade (`lantern.api`, `lantern`) and the public names below it (records,
errors, vocabularies: `PUBLIC` in tests/test_layers.py); it uses none of them.
"""
