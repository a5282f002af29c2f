# ctest script: FILE must not have a DT_NEEDED entry matching PATTERN (default: libsinter).
# Used for dlopen hosts, whose whole point is to load libsinter at run time.
#   cmake -DFILE=<path> [-DREADELF=readelf] [-DPATTERN=libsinter] -P CheckNoNeeded.cmake
if(NOT DEFINED READELF)
  set(READELF readelf)
endif()
if(NOT DEFINED PATTERN)
  set(PATTERN "libsinter")
endif()
execute_process(COMMAND "${READELF}" -d "${FILE}" OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${FILE} failed (${_rc}): ${_err}")
endif()
string(REGEX MATCH "\\(NEEDED\\)[^\n]*\\[[^]\n]*${PATTERN}[^]\n]*\\]" _m "${_out}")
if(_m)
  message(FATAL_ERROR "${FILE} links ${PATTERN} at load time: ${_m}")
endif()
message(STATUS "${FILE}: no NEEDED entry matching ${PATTERN}")
