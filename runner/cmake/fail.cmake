# cmake -DSC_FAIL=<text> -P fail.cmake: fails with the text. The entry ctest runs where the entries cannot be
# made as asked (entries.py): an executable that cannot list its tests, a pattern that selects nothing.
message(FATAL_ERROR "${SC_FAIL}")
