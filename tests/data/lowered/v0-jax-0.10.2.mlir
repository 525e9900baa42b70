module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %c, %iterArg_2 = %arg0, %iterArg_3 = %0) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    cond {
      %c_4 = stablehlo.constant dense<3> : tensor<i32>
      %8 = stablehlo.compare LT, %iterArg, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %8 : tensor<i1>
    } do {
      %8:2 = func.call @closed_call(%iterArg_2) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %9 = func.call @dynamic_update_index_in_dim(%iterArg_3, %8#1, %iterArg) : (tensor<3x4x4x4xf32>, tensor<4x4x4xf32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %10 = stablehlo.add %iterArg, %c_4 : tensor<i32>
      stablehlo.return %10, %8#0, %9 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %2 = stablehlo.slice %1#2 [2:3, 0:4, 0:4, 0:4] : (tensor<3x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5:3 = stablehlo.while(%iterArg = %c_1, %iterArg_2 = %3, %iterArg_3 = %4) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    cond {
      %c_4 = stablehlo.constant dense<3> : tensor<i32>
      %8 = stablehlo.compare LT, %iterArg, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %8 : tensor<i1>
    } do {
      %8:2 = func.call @closed_call_0(%iterArg_2) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %9 = func.call @dynamic_update_index_in_dim(%iterArg_3, %8#1, %iterArg) : (tensor<3x4x4x4xf32>, tensor<4x4x4xf32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %10 = stablehlo.add %iterArg, %c_4 : tensor<i32>
      stablehlo.return %10, %8#0, %9 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %6 = stablehlo.slice %5#2 [2:3, 0:4, 0:4, 0:4] : (tensor<3x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %7 = stablehlo.reshape %6 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    return %7 : tensor<4x4x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<3x4x4x4xf32>, %arg1: tensor<4x4x4xf32>, %arg2: tensor<i32>) -> tensor<3x4x4x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0, %c_1 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
    return %1 : tensor<3x4x4x4xf32>
  }
  func.func private @closed_call_0(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
}
