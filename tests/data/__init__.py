"""Data the tests share, apart from code: settings samples (``samples``, ``clusters``), the values
the library promises (``promised``), upstream's numbers (``ca_instance_types``), and recorded files
(``moto_amis.json``, ``reference_sources.json``). Python data modules hold literals only: no
function, no class, imports from tests/data alone (tests/test_layout.py)."""
