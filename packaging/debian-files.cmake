# What Debian policy asks of the package beside its programs, and what
# lintian checks (ctest packaging.lintian): a man page for every program in
# /usr/bin, the copyright in the machine-readable (DEP-5) format and the
# changelog in /usr/share/doc/mismatch-lab, compressed with `gzip -9n` (best
# compression, no name or time stamp: the same bytes on every build).
# Included by app/CMakeLists.txt, where the programs are defined.
#
# The man pages are written by hand (packaging/man): help2man reads GNU-style
# --help ("Usage:", option tables), and under it ours (a lower-case "usage:",
# a list of commands) becomes one run-on paragraph. ctest packaging.man_pages
# holds each page to its program's --help instead.

set(mlk_deb_out ${PROJECT_BINARY_DIR}/packaging)

# $1: a file to install compressed; $2: its name in the build folder (.gz is
# added). Copied first: gzip replaces the file it compresses.
function(mlk_gzip src name)
  add_custom_command(
    OUTPUT ${mlk_deb_out}/${name}.gz
    COMMAND ${CMAKE_COMMAND} -E copy ${src} ${mlk_deb_out}/${name}
    COMMAND gzip -9nf ${mlk_deb_out}/${name}
    DEPENDS ${src}
    VERBATIM)
endfunction()

set(mlk_man_pages mismatch-lab-cli)
if(MLK_BUILD_GUI)
  list(APPEND mlk_man_pages mismatch-lab mismatch-lab-report)
endif()
set(mlk_deb_files)
foreach(page ${mlk_man_pages})
  # The version in each page's footer.
  configure_file(${PROJECT_SOURCE_DIR}/packaging/man/${page}.1.in ${mlk_deb_out}/man/${page}.1 @ONLY)
  mlk_gzip(${mlk_deb_out}/man/${page}.1 ${page}.1)
  list(APPEND mlk_deb_files ${mlk_deb_out}/${page}.1.gz)
  install(FILES ${mlk_deb_out}/${page}.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endforeach()

# A version without a Debian revision (0.1.0) makes this a native package,
# whose changelog policy names changelog.gz (not changelog.Debian.gz).
mlk_gzip(${PROJECT_SOURCE_DIR}/packaging/changelog changelog)
list(APPEND mlk_deb_files ${mlk_deb_out}/changelog.gz)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${mlk_deb_out}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/mismatch-lab)

add_custom_target(mlk_debian_files ALL DEPENDS ${mlk_deb_files})
