"""What every layer stands on: the user-error type and exit status (``errors``), atomic writes that never follow
links (``io``), the registry of methods and data sources (``registry``), names read from data made safe as paths
(``path_names``), which distributed rank this process is (``ranks``), progress lines of long loops
(``loop_progress``), log files (``log_files``) and the Hugging Face Hub's reachability (``hub``)."""
