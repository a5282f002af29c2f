# ctest script: the shared library's DT_SONAME must be exactly EXPECTED (libsinter.so.<major>).
#   cmake -DLIB=<path> -DREADELF=<readelf> -DEXPECTED=libsinter.so.0 -P CheckSoname.cmake
execute_process(COMMAND "${READELF}" -d "${LIB}" OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${LIB} failed (${_rc}): ${_err}")
endif()
string(REGEX MATCH "\\(SONAME\\)[^\n]*\\[([^]\n]*)\\]" _m "${_out}")
if(NOT _m)
  message(FATAL_ERROR "${LIB} has no SONAME")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL EXPECTED)
  message(FATAL_ERROR "${LIB} has SONAME '${CMAKE_MATCH_1}', expected '${EXPECTED}'")
endif()
message(STATUS "${LIB}: SONAME ${CMAKE_MATCH_1}")
