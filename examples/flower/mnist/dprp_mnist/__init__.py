"""dprp on MNIST in Flower: FedAvg of a logistic regression over 100 non-IID clients, with one
of eight privacy arms (no privacy, Flower's central and local DP, dprp's local and distributed
DP) chosen by the run config's `arm`."""
