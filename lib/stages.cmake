# The stages of libsprof, in the order data flows through them, each with the stages it may use
# and the public headers (lib/include/sprof/<name>.hpp) it owns. This list is the layering:
#
#   - each stage is an object library compiled against an include tree of its own
#     (build/lib/stages/<stage>/) that holds only its own and its dependencies' headers
#     (public: sprof/<name>.hpp; private: <stage>/<name>.hpp), so an #include that reaches a
#     later stage does not compile;
#   - a stage may name only stages declared before it, so no stage depends on one after it;
#   - every public header must belong to a stage (configure fails otherwise).
#
# Dependencies are transitive: a stage sees what its dependencies see. A stage's sources are the
# .cpp files of lib/src/<stage>/ and of the FOLDERS it names (lib/src/<stage>/<folder>/); private
# headers there are included as <stage>/<folder>/<name>.hpp.
# tests/integration/test_layering.py checks the trees: every stage compiles its allowed headers and none other.

sprof_stage(common
  HEADERS clock closest_name demangle json_output logging markup modes result temp_dir version)
sprof_stage(pyframes DEPS common
  HEADERS pyframes)
sprof_stage(store DEPS common FOLDERS codecs files gpu manifest markers pstats samples system traces
  HEADERS layout manifest manifest_sections markers profile profile_files profile_samples pstats sample_log stats_dir
          system_metrics trace_events trace_writer gpu_trace gzip file_bytes)
sprof_stage(timeline DEPS store
  HEADERS step_timeline step_inference step_trace)
sprof_stage(window DEPS store timeline
  HEADERS profiling_window python_profiling)
sprof_stage(sampler DEPS pyframes store)
sprof_stage(launch DEPS pyframes sampler store
  HEADERS launch)
sprof_stage(remote DEPS launch store
  HEADERS s3)
sprof_stage(gpu DEPS launch store
  HEADERS gpu gpu_hook)
sprof_stage(bootstrap DEPS launch store timeline window
  HEADERS bootstrap step_hook)
sprof_stage(sysmon DEPS launch store
  HEADERS sysmon sysmon_hook)
sprof_stage(live DEPS bootstrap launch pyframes store sysmon
  HEADERS top)
sprof_stage(intervals DEPS launch store timeline
  HEADERS interval_stats interval_stats_hook)
sprof_stage(record DEPS bootstrap gpu intervals launch pyframes remote sampler store sysmon timeline window
  HEADERS recorder)
sprof_stage(query DEPS intervals store timeline
  HEADERS open_profile query run_selection sample_filter sampled_profile stats_selection stats_source)
sprof_stage(rules DEPS bootstrap query
  HEADERS custom_rules iterations rules)
sprof_stage(watch DEPS launch query rules store timeline
  HEADERS rule_watch)
sprof_stage(report DEPS query remote rules store timeline
  HEADERS analyze chrome_trace diff_stats gpu_report marker_stats profile_diff profile_export profile_tables report_views
  sample_report)
sprof_stage(render DEPS launch live pyframes query record remote report rules store
  HEADERS top_render analyze_render diff_render dump_render gpu_render marker_stats_render pstats_table record_render rules_render stats_render
          text_table)
sprof_stage(traces DEPS launch report store timeline
  HEADERS trace_windows)
