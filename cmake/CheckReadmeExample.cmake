# ctest script: the C example in README.md compiles against libsinter.so and runs (exit 0), so the README cannot
# drift from the API. The example is the ```c block between <!-- C-EXAMPLE --> and <!-- /C-EXAMPLE -->.
# If README.md also has a ```text block between <!-- C-EXAMPLE-OUTPUT --> and <!-- /C-EXAMPLE-OUTPUT -->, the
# program's standard output must equal it.
#   cmake -DREADME=<README.md> -DCC=<cc> -DINCLUDE_DIR=<capi/include> -DLIB=<libsinter.so> -DWORK_DIR=<dir>
#         [-DEXTRA_FLAGS=<flag|flag...>] -P CheckReadmeExample.cmake
string(REPLACE "|" ";" EXTRA_FLAGS "${EXTRA_FLAGS}")
file(READ "${README}" _text)

# Returns in out_var the body of the first ```<lang> block between <!-- marker --> and <!-- /marker -->.
function(sn_fenced_block text marker lang out_var)
  string(FIND "${text}" "<!-- ${marker} -->" _begin)
  string(FIND "${text}" "<!-- /${marker} -->" _end)
  if(_begin EQUAL -1 OR _end EQUAL -1 OR _end LESS _begin)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  math(EXPR _len "${_end} - ${_begin}")
  string(SUBSTRING "${text}" ${_begin} ${_len} _section)
  string(FIND "${_section}" "```${lang}\n" _fence)
  if(_fence EQUAL -1)
    message(FATAL_ERROR "${README}: no ```${lang} block between <!-- ${marker} --> and <!-- /${marker} -->")
  endif()
  string(LENGTH "```${lang}\n" _fence_len)
  math(EXPR _body_begin "${_fence} + ${_fence_len}")
  string(SUBSTRING "${_section}" ${_body_begin} -1 _body)
  string(FIND "${_body}" "```" _close)
  if(_close EQUAL -1)
    message(FATAL_ERROR "${README}: unterminated ```${lang} block in <!-- ${marker} -->")
  endif()
  string(SUBSTRING "${_body}" 0 ${_close} _body)
  set(${out_var} "${_body}" PARENT_SCOPE)
endfunction()

sn_fenced_block("${_text}" C-EXAMPLE c _code)
if(_code STREQUAL "")
  message(FATAL_ERROR "${README}: the <!-- C-EXAMPLE --> ... <!-- /C-EXAMPLE --> section is missing")
endif()
sn_fenced_block("${_text}" C-EXAMPLE-OUTPUT text _expected)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(WRITE "${WORK_DIR}/readme_example.c" "${_code}")
cmake_path(GET LIB PARENT_PATH _libdir)
execute_process(
  COMMAND "${CC}" -std=c11 -Wall -Wextra -Werror ${EXTRA_FLAGS} "-I${INCLUDE_DIR}" "${WORK_DIR}/readme_example.c"
          "${LIB}" "-Wl,-rpath,${_libdir}" -o "${WORK_DIR}/readme_example"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the README C example does not compile (${WORK_DIR}/readme_example.c):\n${_out}")
endif()
execute_process(COMMAND "${WORK_DIR}/readme_example" RESULT_VARIABLE _rc OUTPUT_VARIABLE _stdout
                ERROR_VARIABLE _stderr)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the README C example exited with ${_rc}\nstdout:\n${_stdout}\nstderr:\n${_stderr}")
endif()
if(NOT _expected STREQUAL "" AND NOT _stdout STREQUAL _expected)
  message(FATAL_ERROR "the README C example printed:\n${_stdout}\nbut README.md says it prints:\n${_expected}")
endif()
message(STATUS "README C example OK; it printed:\n${_stdout}")
