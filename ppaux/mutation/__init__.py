"""Mutation testing with mutmut 3: ``ppaux mutate`` (:mod:`~ppaux.mutation.mutate`) on any
implementation, ppaux's own runs (:mod:`~ppaux.mutation.own`, ``python -m reports mutation``),
and what both share: mutmut's project and run (:mod:`~ppaux.mutation.project`), the score and the
equivalent mutants (:mod:`~ppaux.mutation.score`), a mutant by what it changes rather than by
mutmut's number (:mod:`~ppaux.mutation.identity`), the judgements keyed by it
(:mod:`~ppaux.mutation.equivalents`), the recorded results an incremental run reuses
(:mod:`~ppaux.mutation.history`) and the pytest plugin of every mutant's test run
(:mod:`~ppaux.mutation.mutant_runs`). The reports are typed data of the report layer
(:mod:`ppaux.report.mutation`, rendered by :mod:`ppaux.report.render`).

Above the testing layer (it runs the shipped suite), below the command line.
"""
