# Fuzzing of what `stasis restart` and `stasis inspect` read from disk: MANIFEST.json and images.
#   fuzz.replay.TARGET  every corpus file (tests/fuzz/corpus/TARGET: seeds and inputs that once
#                       crashed) through the target, built with the project's compiler: always runs
#   fuzz.run.TARGET     25 s of libFuzzer (scripts/fuzz.sh: clang++, ASan, UBSan), new inputs kept
#                       in the build folder; skipped (exit 77) where clang++ has no libFuzzer
# Longer runs: scripts/fuzz.sh run TARGET SECONDS (see docs/image-format.md, Fuzzing).
set(STASIS_FUZZ_SOURCES_image ${PROJECT_SOURCE_DIR}/src/image/reader.cc)
set(STASIS_FUZZ_SOURCES_manifest ${PROJECT_SOURCE_DIR}/src/restart/checkpoint.cc)
foreach(target image manifest)
  add_executable(stasis_fuzz_replay_${target} ${CMAKE_CURRENT_LIST_DIR}/${target}_fuzzer.cc
                 ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc ${STASIS_FUZZ_SOURCES_${target}})
  target_compile_definitions(stasis_fuzz_replay_${target} PRIVATE _GNU_SOURCE)
  target_include_directories(stasis_fuzz_replay_${target} PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(stasis_fuzz_replay_${target} PRIVATE stasis_common fmt::fmt
                        nlohmann_json::nlohmann_json PkgConfig::ZSTD PkgConfig::LZ4)
  add_test(NAME fuzz.replay.${target}
           COMMAND stasis_fuzz_replay_${target} ${CMAKE_CURRENT_LIST_DIR}/corpus/${target})
  set_tests_properties(fuzz.replay.${target} PROPERTIES TIMEOUT 120 LABELS fuzz)
  add_test(NAME fuzz.run.${target}
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz.sh run ${target} 25 ${CMAKE_BINARY_DIR}/fuzz)
  # The first run builds the fuzzer (about a minute on a loaded machine).
  set_tests_properties(fuzz.run.${target} PROPERTIES TIMEOUT 400 LABELS fuzz SKIP_RETURN_CODE 77
                       RESOURCE_LOCK fuzz_build)
endforeach()
