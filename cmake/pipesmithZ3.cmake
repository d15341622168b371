# Z3 for pipesmith::synth: the imported target z3::libz3 (z3.h, z3++.h, libz3.so).
#
# PIPESMITH_Z3 picks where it comes from:
#  * pypi (default): the `z3-solver` wheel pinned in python/requirements.txt and pyproject.toml
#    (Z3 5.4.0), which ships z3.h, z3++.h and libz3.so in its package folder z3/ (include/, lib/).
#    Found under -DZ3_ROOT=DIR (DIR/include/z3++.h, DIR/lib/libz3.so), else in the package of the
#    Python interpreter that builds pipesmith (Python_EXECUTABLE: .venv's, or the one `pip install .`
#    runs), else in .venv/lib/python3*/site-packages/z3.
#  * system: the system's Z3 through pkg-config (Debian's libz3-dev: Z3 4.8.12 on bookworm), for a
#    side-by-side comparison (docs/synth.md, "Which Z3") or a machine without the wheel.
# The library's folder is on the build tree's run path (CMake adds it). pipesmith_z3_rpath(TARGET
# REL) adds to an installed TARGET's run path $ORIGIN/REL/z3/lib, REL leading from the target's
# install folder to site-packages (the wheel's z3/ sits beside pipesmith/ there; "" for none), and
# the absolute folder the build linked (a devel install on the same machine). The command's REL is
# PIPESMITH_Z3_SCRIPTS_TO_SITE (bin/ to site-packages, from the interpreter's sysconfig).
set(PIPESMITH_Z3 "pypi" CACHE STRING "Where Z3 comes from: pypi (the z3-solver wheel; -DZ3_ROOT=...) or system (pkg-config)")
set_property(CACHE PIPESMITH_Z3 PROPERTY STRINGS pypi system)
set(PIPESMITH_Z3_WHEEL_VERSION "5.4.0.0")

if(PIPESMITH_Z3 STREQUAL "system")
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)
  add_library(z3::libz3 INTERFACE IMPORTED)
  target_link_libraries(z3::libz3 INTERFACE PkgConfig::Z3)
  set(PIPESMITH_Z3_LIBDIR "")
  message(STATUS "pipesmith: Z3 ${Z3_VERSION} from the system (pkg-config: ${Z3_LINK_LIBRARIES})")
elseif(PIPESMITH_Z3 STREQUAL "pypi")
  set(_z3_hints "")
  set(_z3_py "")
  if(Z3_ROOT)
    list(APPEND _z3_hints "${Z3_ROOT}")
  else()
    if(DEFINED Python_EXECUTABLE)
      set(_z3_py "${Python_EXECUTABLE}")
    elseif(EXISTS "${CMAKE_SOURCE_DIR}/.venv/bin/python")
      set(_z3_py "${CMAKE_SOURCE_DIR}/.venv/bin/python")
    endif()
    if(_z3_py)
      execute_process(COMMAND "${_z3_py}" -c "import os, z3; print(os.path.dirname(z3.__file__))"
                      OUTPUT_VARIABLE _z3_pkg OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _z3_rc)
      if(_z3_rc EQUAL 0 AND _z3_pkg)
        list(APPEND _z3_hints "${_z3_pkg}")
      endif()
    endif()
    file(GLOB _z3_venv "${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/z3")
    list(APPEND _z3_hints ${_z3_venv})
  endif()
  # NO_DEFAULT_PATH: never the system's z3.h / libz3.so by accident (they are another version).
  find_path(Z3_WHEEL_INCLUDE_DIR z3++.h PATHS ${_z3_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(Z3_WHEEL_LIBRARY NAMES z3 PATHS ${_z3_hints} PATH_SUFFIXES lib NO_DEFAULT_PATH)
  if(NOT Z3_WHEEL_INCLUDE_DIR OR NOT Z3_WHEEL_LIBRARY)
    message(FATAL_ERROR "pipesmith: Z3 not found in the z3-solver package (looked in: ${_z3_hints}). Install it "
                        "(scripts/install-deps puts z3-solver==${PIPESMITH_Z3_WHEEL_VERSION} into .venv), point "
                        "-DZ3_ROOT at a folder with include/z3++.h and lib/libz3.so, or configure with "
                        "-DPIPESMITH_Z3=system for the system's Z3 (pkg-config)")
  endif()
  # The wheel has no z3_version.h: the version is in the library's file name (libz3.so.5.4).
  get_filename_component(PIPESMITH_Z3_LIBDIR "${Z3_WHEEL_LIBRARY}" DIRECTORY)
  file(GLOB _z3_sonames "${PIPESMITH_Z3_LIBDIR}/libz3.so.*")
  set(Z3_VERSION "")
  if(_z3_sonames)
    list(GET _z3_sonames 0 _z3_so)
    string(REGEX REPLACE ".*libz3\\.so\\." "" Z3_VERSION "${_z3_so}")
  endif()
  # Installed by `pip install .`, the command lands in the environment's scripts folder (bin/) and
  # finds the wheel's libz3 through the relative path from there to site-packages.
  set(PIPESMITH_Z3_SCRIPTS_TO_SITE "")
  if(_z3_py)
    execute_process(COMMAND "${_z3_py}" -c "import os, sysconfig; print(os.path.relpath(sysconfig.get_path('platlib'), sysconfig.get_path('scripts')))"
                    OUTPUT_VARIABLE _z3_rel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _z3_rc)
    if(_z3_rc EQUAL 0 AND _z3_rel)
      set(PIPESMITH_Z3_SCRIPTS_TO_SITE "${_z3_rel}")
    endif()
  endif()
  add_library(z3::libz3 SHARED IMPORTED)
  set_target_properties(z3::libz3 PROPERTIES IMPORTED_LOCATION "${Z3_WHEEL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Z3_WHEEL_INCLUDE_DIR}")
  message(STATUS "pipesmith: Z3 ${Z3_VERSION} from the z3-solver package (${Z3_WHEEL_LIBRARY})")
else()
  message(FATAL_ERROR "pipesmith: PIPESMITH_Z3 must be pypi or system, got '${PIPESMITH_Z3}'")
endif()
# Initial values (warm starts: Z3_solver_set_initial_value) came with Z3 4.13.1; synth/z3/encode.cpp
# uses them where the Z3 built against has them.
if(Z3_VERSION VERSION_GREATER_EQUAL 4.13.1)
  set_property(TARGET z3::libz3 APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS PIPESMITH_Z3_INITIAL_VALUES)
endif()

function(pipesmith_z3_rpath target rel)
  if(NOT PIPESMITH_Z3_LIBDIR)
    return()
  endif()
  if(NOT rel STREQUAL "")
    set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH "$ORIGIN/${rel}/z3/lib")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH "${PIPESMITH_Z3_LIBDIR}")
endfunction()
