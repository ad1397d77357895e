package profile

// SolveRouter exposes solveRouter to the external tests.
var SolveRouter = solveRouter

// ClusterOrder exposes clusterOrder to the external tests.
var ClusterOrder = clusterOrder
