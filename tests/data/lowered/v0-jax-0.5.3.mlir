module @jit_outer_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %c, %iterArg_6 = %arg0, %iterArg_7 = %0) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %c_8 = stablehlo.constant dense<3> : tensor<i32>
      %14 = stablehlo.compare  LT, %iterArg, %c_8,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %14 : tensor<i1>
    } do {
      %14:2 = func.call @None(%iterArg_6) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %15 = stablehlo.broadcast_in_dim %14#1, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %c_8 = stablehlo.constant dense<0> : tensor<i32>
      %16 = stablehlo.dynamic_update_slice %iterArg_7, %15, %iterArg, %c_8, %c_8, %c_8 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_9 = stablehlo.constant dense<1> : tensor<i32>
      %17 = stablehlo.add %iterArg, %c_9 : tensor<i32>
      stablehlo.return %17, %14#0, %16 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %c_0 = stablehlo.constant dense<-1> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.compare  LT, %c_0, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<-1> : tensor<i32>
    %c_3 = stablehlo.constant dense<3> : tensor<i32>
    %3 = stablehlo.add %c_2, %c_3 : tensor<i32>
    %4 = stablehlo.select %2, %3, %c_0 : tensor<i1>, tensor<i32>
    %5 = stablehlo.dynamic_slice %1#2, %4, %c_1, %c_1, %c_1, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %6 = stablehlo.reshape %5 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x4x4x4xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %8:3 = stablehlo.while(%iterArg = %c_5, %iterArg_6 = %6, %iterArg_7 = %7) : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
     cond {
      %c_8 = stablehlo.constant dense<3> : tensor<i32>
      %14 = stablehlo.compare  LT, %iterArg, %c_8,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %14 : tensor<i1>
    } do {
      %14:2 = func.call @None_0(%iterArg_6) : (tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>)
      %15 = stablehlo.broadcast_in_dim %14#1, dims = [1, 2, 3] : (tensor<4x4x4xf32>) -> tensor<1x4x4x4xf32>
      %c_8 = stablehlo.constant dense<0> : tensor<i32>
      %16 = stablehlo.dynamic_update_slice %iterArg_7, %15, %iterArg, %c_8, %c_8, %c_8 : (tensor<3x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x4x4x4xf32>
      %c_9 = stablehlo.constant dense<1> : tensor<i32>
      %17 = stablehlo.add %iterArg, %c_9 : tensor<i32>
      stablehlo.return %17, %14#0, %16 : tensor<i32>, tensor<4x4x4xf32>, tensor<3x4x4x4xf32>
    }
    %9 = stablehlo.compare  LT, %c_0, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.add %c_2, %c_3 : tensor<i32>
    %11 = stablehlo.select %9, %10, %c_0 : tensor<i1>, tensor<i32>
    %12 = stablehlo.dynamic_slice %8#2, %11, %c_1, %c_1, %c_1, sizes = [1, 4, 4, 4] : (tensor<3x4x4x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x4x4xf32>
    %13 = stablehlo.reshape %12 : (tensor<1x4x4x4xf32>) -> tensor<4x4x4xf32>
    return %13 : tensor<4x4x4xf32>
  }
  func.func private @None(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
  func.func private @None_0(%arg0: tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4x4xf32>
    %1 = stablehlo.cosine %0 : tensor<4x4x4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<4x4x4xf32>
    return %3, %3 : tensor<4x4x4xf32>, tensor<4x4x4xf32>
  }
}
