"""horovodrun's elastic mode (on with --host-discovery-script or --min-np):
hosts discovered and blacklisted (host_manager.py, discovery.py), rounds
planned (assignment.py) and run (driver.py). The protocol with the workers
is NOTE [Elastic rounds] in horovod_accel/common/elastic_protocol.py;
docs/elastic.md explains the model to users."""
