"""What the test modules share, as code (its data is in tests/data; the fixtures in tests/conftest.py).
Nothing here asserts anything about the library by itself; nothing here is a test module, and no test
module imports another (tests/test_layout.py). Import a module's names from the module
(``from tests.support.simulation import simulate``): this package re-exports nothing.

docs/development.md ("How the tests are organised") says what each module holds.
"""
