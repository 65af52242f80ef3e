"""The printer adversary: printers nobody described, generated from a catalogue of behaviours.

- :mod:`.proxy`: a loopback proxy *in front of* a real printer (ippeveprinter, LPrint) that
  changes what edgeprint is told, or cuts what the printer gets — never what prints;
- :mod:`.catalogue`: the behaviours, each with the public source it comes from;
- :mod:`.generator`: a seed → a scenario (a personality per printer from several
  behaviours, jobs, appliance kills, printer power cycles, other clients);
- :mod:`.runner`: one scenario against real printers and a real appliance process;
- :mod:`.oracle`: the invariants I1–I6, checked against the printers' own logs.

Shared by the tests (tests/test_adversary.py, tests/test_behaviours.py) and the benchmark
(bench/adversary_bench.py); it imports neither.
"""
