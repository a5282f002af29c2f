# ctest script: libsinter.so must export C API symbols (sn_*) and nothing else.
#   cmake -DLIB=<path to libsinter.so> -DNM=<nm> -DVERSION_NODE=SINTER_0 -P CheckExports.cmake
# Fails when the library exports no sn_* symbol at all (a broken version script would otherwise pass),
# when any other symbol is exported (leaked C++/libstdc++/LLVM internals), or when an sn_* symbol is not
# bound to a SINTER_* version node (the map was not applied).
foreach(_v LIB NM)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "CheckExports.cmake: pass -D${_v}=...")
  endif()
endforeach()

execute_process(COMMAND "${NM}" -D --defined-only --with-symbol-versions --format=posix "${LIB}"
                OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIB} (${_rc}): ${_err}")
endif()

string(REPLACE "\n" ";" _lines "${_out}")
set(_api "")
set(_bad "")
set(_unversioned "")
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  # posix format: "<name>[@@version] <type> <value> [<size>]"
  string(REGEX MATCH "^([^ @]+)(@@?[^ ]+)? ([A-Za-z])" _m "${_line}")
  if(NOT _m)
    message(FATAL_ERROR "cannot parse nm line: '${_line}'")
  endif()
  set(_name "${CMAKE_MATCH_1}")
  set(_ver "${CMAKE_MATCH_2}")
  set(_type "${CMAKE_MATCH_3}")
  # The linker emits each version node (SINTER_0, ...) as an absolute symbol; that is ours too.
  if(_type STREQUAL "A" AND _name MATCHES "^SINTER_[0-9._]+$")
    continue()
  endif()
  # A local symbol in .dynsym (lower-case type: d, r, t, b) is not an export: other modules cannot bind to it. GNU ld
  # leaves such entries for the vague-linkage objects (typeinfo, function-local statics) of static archives linked in
  # (liblld) after the version script localized them. Unique (u), weak (v, w) and indirect (i) symbols are exports.
  if(_type MATCHES "^[a-z]$" AND NOT _type MATCHES "^[uvwi]$")
    continue()
  endif()
  if(_name MATCHES "^sn_")
    list(APPEND _api "${_name}")
    if(NOT _ver MATCHES "^@@?SINTER_")
      list(APPEND _unversioned "${_name}${_ver}")
    endif()
  else()
    list(APPEND _bad "${_name}${_ver} (${_type})")
  endif()
endforeach()

list(LENGTH _api _n_api)
list(LENGTH _bad _n_bad)
if(_n_api EQUAL 0)
  message(FATAL_ERROR "${LIB} exports no sn_* symbols (is the C API compiled with default visibility?)")
endif()
if(_n_bad GREATER 0)
  list(JOIN _bad "\n  " _bad_text)
  message(FATAL_ERROR "${LIB} exports ${_n_bad} symbol(s) outside the sn_ namespace:\n  ${_bad_text}")
endif()
if(_unversioned)
  list(JOIN _unversioned "\n  " _uv_text)
  message(FATAL_ERROR "sn_* symbols without a SINTER_* version (version script not applied?):\n  ${_uv_text}")
endif()
message(STATUS "${LIB}: ${_n_api} exported sn_* symbols, nothing else")
