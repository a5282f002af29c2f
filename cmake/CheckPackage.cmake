# ctest script: install the build into a staging prefix, then build C programs against the INSTALLED package
# twice -- once with pkg-config (what the Rust binding's build.rs uses) and once with find_package(Sinter) -- and run them.
# Catches a header that is not installed, a wrong export set, a broken .pc file or a missing SONAME link.
#
#   cmake -DBUILD_DIR=<build> -DWORK_DIR=<scratch> -DCC=<c compiler> -DPKG_CONFIG=<pkg-config>
#         -DGENERATOR=<cmake generator> -DSOURCES=<a.c|b.c> [-DEXTRA_FLAGS=<flag|flag...>] -P CheckPackage.cmake
foreach(_v BUILD_DIR WORK_DIR CC PKG_CONFIG GENERATOR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "CheckPackage.cmake: pass -D${_v}=...")
  endif()
endforeach()

string(REPLACE "|" ";" SOURCES "${SOURCES}")
string(REPLACE "|" ";" EXTRA_FLAGS "${EXTRA_FLAGS}")

function(sn_run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    list(JOIN ARGN " " _cmd)
    message(FATAL_ERROR "failed (${_rc}): ${_cmd}\n${_out}")
  endif()
endfunction()

set(_stage "${WORK_DIR}/stage")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
sn_run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${_stage}")

# With no example yet, a program that only includes the header and links the library still proves the
# headers are installed and the library loads through its SONAME.
if(NOT SOURCES)
  set(SOURCES "${WORK_DIR}/header_only.c")
  file(WRITE "${SOURCES}" "#include <sinter/sinter.h>\nint main(void) { return 0; }\n")
endif()

# 1. pkg-config
file(GLOB_RECURSE _pc "${_stage}/*/sinter.pc")
if(NOT _pc)
  message(FATAL_ERROR "sinter.pc was not installed under ${_stage}")
endif()
list(GET _pc 0 _pc)
cmake_path(GET _pc PARENT_PATH _pc_dir)
set(ENV{PKG_CONFIG_PATH} "${_pc_dir}")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs sinter RESULT_VARIABLE _rc OUTPUT_VARIABLE _flags
                ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "pkg-config sinter failed: ${_err}")
endif()
execute_process(COMMAND "${PKG_CONFIG}" --variable=libdir sinter OUTPUT_VARIABLE _libdir
                OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(_flags UNIX_COMMAND "${_flags}")
foreach(_src IN LISTS SOURCES)
  cmake_path(GET _src STEM _stem)
  set(_exe "${WORK_DIR}/pc_${_stem}")
  sn_run("${CC}" ${EXTRA_FLAGS} "${_src}" -o "${_exe}" ${_flags} "-Wl,-rpath,${_libdir}")
  sn_run("${_exe}")
endforeach()

# 2. find_package(Sinter) from a separate CMake project
set(_proj "${WORK_DIR}/consumer")
file(MAKE_DIRECTORY "${_proj}")
list(JOIN EXTRA_FLAGS " " _extra)
set(_cml "cmake_minimum_required(VERSION 3.25)\nproject(sinter_consumer C)\n")
string(APPEND _cml "find_package(Sinter ${SN_VERSION} CONFIG REQUIRED)\n")
string(APPEND _cml "set(CMAKE_C_FLAGS \"${_extra}\")\n")
foreach(_src IN LISTS SOURCES)
  cmake_path(GET _src STEM _stem)
  string(APPEND _cml "add_executable(${_stem} \"${_src}\")\ntarget_link_libraries(${_stem} PRIVATE Sinter::sinter)\n")
endforeach()
file(WRITE "${_proj}/CMakeLists.txt" "${_cml}")
sn_run("${CMAKE_COMMAND}" -S "${_proj}" -B "${_proj}/build" -G "${GENERATOR}" "-DCMAKE_C_COMPILER=${CC}"
       "-DCMAKE_PREFIX_PATH=${_stage}")
sn_run("${CMAKE_COMMAND}" --build "${_proj}/build")
foreach(_src IN LISTS SOURCES)
  cmake_path(GET _src STEM _stem)
  sn_run("${_proj}/build/${_stem}")
endforeach()
list(LENGTH SOURCES _n)
message(STATUS "installed package OK: ${_n} program(s) built with pkg-config and with find_package(Sinter)")
