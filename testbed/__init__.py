"""What tests and benchmarks share: real printers (rig), the appliance as a child process
(proc), PDF makers (pdfs) and appliance configs (config). Never imports tests/ or bench/."""
