"""The checkout's entry to the nightly fuzz job: ``python -m fuzz`` is ``ppaux fuzz`` (:mod:`ppaux.fuzz`)."""
