"""dprp distributed DP in Flower's deployment engine: the test app of test_flower_deployment.py."""
