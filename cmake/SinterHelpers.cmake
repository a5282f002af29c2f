# Small helpers shared by the tests/, bench/ and examples/ CMakeLists.

# sn_add_programs(<prefix> <out-list-var> SOURCES <files...> [LINK <libs...>] [DEFINES <defs...>])
#
# One executable per source file: target "<prefix>_<stem>", binary "<stem>" in the current binary dir, so that
# examples/demo.c becomes build/examples/demo. The created target names are returned in <out-list-var>.
function(sn_add_programs prefix out_var)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "" "SOURCES;LINK;DEFINES")
  set(_targets "")
  foreach(_src IN LISTS ARG_SOURCES)
    cmake_path(GET _src STEM _stem)
    set(_t "${prefix}_${_stem}")
    add_executable(${_t} "${_src}")
    set_target_properties(${_t} PROPERTIES OUTPUT_NAME "${_stem}")
    if(ARG_LINK)
      target_link_libraries(${_t} PRIVATE ${ARG_LINK})
    endif()
    if(ARG_DEFINES)
      target_compile_definitions(${_t} PRIVATE ${ARG_DEFINES})
    endif()
    list(APPEND _targets ${_t})
  endforeach()
  set(${out_var} "${_targets}" PARENT_SCOPE)
endfunction()
