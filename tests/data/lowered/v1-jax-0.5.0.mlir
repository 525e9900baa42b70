module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg0) : tensor<i32>, tensor<4x4x4xf32>
     cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = func.call @None(%iterArg_1) : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %3, %2 : tensor<i32>, tensor<4x4x4xf32>
    }
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.while(%iterArg = %c_0, %iterArg_1 = %0#1) : tensor<i32>, tensor<4x4x4xf32>
     cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = func.call @None_0(%iterArg_1) : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %3, %2 : tensor<i32>, tensor<4x4x4xf32>
    }
    return %1#1 : tensor<4x4x4xf32>
  }
  func.func private @None(%arg0: tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3 : tensor<4x4x4xf32>
  }
  func.func private @None_0(%arg0: tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3 : tensor<4x4x4xf32>
  }
}
